// Objection models of the catalogue. Money columns stay as the database returns them (DECIMAL: a string on
// MariaDB, a number on SQLite); convert with toCents() from lib/db.ts, never with float arithmetic.
import type { ProductStatus } from '../../actors/product-status';
import { BaseModel } from '../db';

export { PRODUCT_STATUSES, type ProductStatus } from '../../actors/product-status';

export class ProductImage extends BaseModel {
  static tableName = 'product_images';

  id!: number;
  productId!: number;
  imageUrl!: string;
  fileName!: string;
  displayOrder!: number;
  createdAt!: Date;
}

export class Product extends BaseModel {
  static tableName = 'products';

  id!: number;
  sellerId!: number;
  categoryId!: number;
  name!: string;
  description!: string | null;
  price!: string | number;
  stockQuantity!: number;
  status!: ProductStatus;
  salesCount!: number;
  /** Bumped by every seller edit that is not stock only (product-repository.ts withCatalogVersion). */
  catalogVersion!: number;
  createdAt!: Date;
  updatedAt!: Date;
  images?: ProductImage[];

  static get relationMappings() {
    return {
      images: {
        relation: BaseModel.HasManyRelation,
        modelClass: ProductImage,
        join: { from: 'products.id', to: 'product_images.product_id' },
      },
    };
  }
}
