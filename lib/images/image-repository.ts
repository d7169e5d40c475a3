// The SQL of the images area (Objection models; the locking statements through the query builder).
import { affectedRows, type Db, type Trx } from '../db';
import { Product, ProductImage } from '../products/product-model';

export type ProductOwnership = Pick<Product, 'sellerId' | 'status'>;

export interface NewImage {
  productId: number;
  imageUrl: string;
  fileName: string;
  displayOrder: number;
  byteSize: number;
  createdAt: Date;
}

export function createImageRepository(db: Db) {
  return {
    /** The product's images by displayOrder, then id. */
    async listImages(productId: number, trx?: Trx): Promise<ProductImage[]> {
      return ProductImage.query(trx ?? db)
        .where('product_id', productId)
        .orderBy([{ column: 'display_order' }, { column: 'id' }]);
    },

    /** One primary-key lookup: who owns the product, and whether it is live. */
    async findOwnership(productId: number): Promise<ProductOwnership | undefined> {
      return Product.query(db).findById(productId).select('seller_id', 'status');
    },

    /** The status of the product a stored image file belongs to; undefined when no image row names the file. */
    async findImageProductStatus(productId: number, fileName: string): Promise<string | undefined> {
      const row = (await db('product_images')
        .join('products', 'products.id', 'product_images.product_id')
        .where({ 'product_images.product_id': productId, 'product_images.file_name': fileName })
        .first('products.status')) as { status: string } | undefined;
      return row?.status;
    },

    /**
     * Locks a live product for this transaction: the first statement is a write on the product row, which holds
     * the row lock on MySQL until commit and takes SQLite's write lock up front, so two uploads for one product
     * (even from two processes) count and insert one after the other. Undefined when unknown or deleted.
     */
    async lockLiveProduct(trx: Trx, productId: number): Promise<ProductOwnership | undefined> {
      const touched = affectedRows(
        await trx('products')
          .where('id', productId)
          .whereNot('status', 'DELETED')
          .update({ updated_at: new Date() }),
      );
      return touched > 0 ? Product.query(trx).findById(productId).forUpdate() : undefined;
    },

    /**
     * How many images the product has and the highest displayOrder. Call it after `lockLiveProduct` and before
     * any other plain read of the transaction: on MySQL its snapshot is then taken after the product's lock was
     * granted, so it counts every upload committed before. Not a locking read: a locking read takes a gap lock
     * on the image index, and new products share a gap, so two sellers' uploads would deadlock on their inserts.
     */
    async countImages(trx: Trx, productId: number): Promise<{ count: number; maxOrder: number }> {
      const [{ count, maxOrder }] = (await trx('product_images')
        .where('product_id', productId)
        .count({ count: '*' })
        .max({ maxOrder: 'display_order' })) as Array<{ count: number | string; maxOrder: number | null }>;
      return { count: Number(count), maxOrder: Number(maxOrder ?? 0) };
    },

    async insertImage(trx: Trx, image: NewImage): Promise<void> {
      await trx('product_images').insert({
        product_id: image.productId,
        image_url: image.imageUrl,
        file_name: image.fileName,
        display_order: image.displayOrder,
        byte_size: image.byteSize,
        created_at: image.createdAt,
      });
    },

    /**
     * Deletes every image row of a DELETED product (none of a live one: its images are still served); returns
     * their stored file names.
     */
    async deleteImagesOfDeletedProduct(trx: Trx, productId: number): Promise<string[]> {
      const deleted = await trx('products').where({ id: productId, status: 'DELETED' }).first('id');
      if (!deleted) return [];
      const rows = (await trx('product_images').where('product_id', productId).select('file_name')) as Array<{
        file_name: string;
      }>;
      await trx('product_images').where('product_id', productId).delete();
      return rows.map((row) => row.file_name);
    },

    /** Up to `limit` DELETED products that still have image rows (what a purge did not reach). */
    async deletedProductsWithImages(limit: number): Promise<number[]> {
      const rows = (await db('product_images')
        .join('products', 'products.id', 'product_images.product_id')
        .where('products.status', 'DELETED')
        .distinct('product_images.product_id as productId')
        .limit(limit)) as Array<{ productId: number }>;
      return rows.map((row) => Number(row.productId));
    },

    /** The stored file names the image rows of these products name, as `<productId>/<file name>`. */
    async namedFiles(productIds: number[]): Promise<Set<string>> {
      const rows = (await db('product_images')
        .whereIn('product_id', productIds)
        .select('product_id', 'file_name')) as Array<{ product_id: number; file_name: string }>;
      return new Set(rows.map((row) => `${row.product_id}/${row.file_name}`));
    },

    /** Deletes one image of the product; returns its stored file name, or undefined when there is none. */
    async deleteImage(trx: Trx, productId: number, imageId: number): Promise<string | undefined> {
      const image = await ProductImage.query(trx).findById(imageId).where('product_id', productId);
      if (!image) return undefined;
      await ProductImage.query(trx).deleteById(imageId);
      return image.fileName;
    },
  };
}
