// The product JSON of API.md (typed by the one product shape, product-schemas.ts), and the one query that attaches images to a list of products.
import type { Db } from '../db';
import { fromCents, toCents } from '../db';
import type { ImageJson } from '../images/image-schemas';
import { Product } from './product-model';
import type { ProductJson } from './product-schemas';

export type { ProductJson };

export function productJson(product: Product, images: ImageJson[]): ProductJson {
  return {
    id: product.id,
    sellerId: product.sellerId,
    categoryId: product.categoryId,
    name: product.name,
    description: product.description ?? null,
    price: fromCents(toCents(product.price)),
    stockQuantity: product.stockQuantity,
    status: product.status,
    salesCount: product.salesCount,
    images,
    createdAt: product.createdAt.toISOString(),
    updatedAt: product.updatedAt.toISOString(),
  };
}

/** Images of many products in one query, each list ordered by displayOrder then id. */
export async function imagesByProduct(db: Db, productIds: number[]): Promise<Map<number, ImageJson[]>> {
  const out = new Map<number, ImageJson[]>(productIds.map((id) => [id, []]));
  if (productIds.length === 0) return out;
  const rows = await db('product_images')
    .whereIn('product_id', productIds)
    .orderBy([{ column: 'product_id' }, { column: 'display_order' }, { column: 'id' }])
    .select('id', 'product_id', 'image_url', 'display_order');
  for (const row of rows) {
    out
      .get(Number(row.product_id))
      ?.push({ id: Number(row.id), imageUrl: row.image_url, displayOrder: Number(row.display_order) });
  }
  return out;
}

/** Raw `products` rows (snake_case) to product JSON, with their images. */
export async function productsJson(db: Db, rows: Record<string, unknown>[]): Promise<ProductJson[]> {
  const products = rows.map((row) => Product.fromDatabaseJson(row));
  const images = await imagesByProduct(
    db,
    products.map((p) => p.id),
  );
  return products.map((p) => productJson(p, images.get(p.id) ?? []));
}
