// Seller quotas (SELLER_MAX_PRODUCTS, SELLER_MAX_IMAGE_BYTES), so one account cannot fill the database or
// the disk. Enforced under concurrency by locking the seller's member row before counting, inside the
// transaction that then writes: concurrent creates or uploads of one seller (also from other processes)
// count one after the other, never both below the limit. The lock is a write (`updated_at = updated_at`,
// nothing changes), so SQLite takes its write lock up front as well, and on MySQL the count that follows
// reads a snapshot taken after the lock was granted.
import type { Config } from '../config';
import type { Trx } from '../db';
import { ConflictError } from '../errors';

export function createSellerQuotas(config: Pick<Config, 'quotas'>) {
  const { productsPerSeller, imageBytesPerSeller } = config.quotas;

  async function lockSeller(trx: Trx, sellerId: number): Promise<void> {
    await trx('members')
      .where('id', sellerId)
      .update({ updated_at: trx.ref('updated_at') });
  }

  return {
    /**
     * Takes the seller's lock for this transaction. A transaction that also locks a product's row takes that one
     * first (an image upload), as an order batch does (it holds product rows, then reads the seller's row for its
     * foreign key): the same order everywhere, so none of them waits on another's locks in a cycle (a MySQL
     * deadlock). A product's creation locks the seller before it inserts the product: it holds no product row.
     */
    lockSeller,

    /** Call first in the transaction that inserts the product. 409 when the seller has the maximum. */
    async reserveProduct(trx: Trx, sellerId: number): Promise<void> {
      await lockSeller(trx, sellerId);
      const [{ count }] = await trx('products')
        .where('seller_id', sellerId)
        .whereNot('status', 'DELETED')
        .count({ count: '*' });
      if (Number(count) >= productsPerSeller) {
        throw new ConflictError(
          'PRODUCT_QUOTA_EXCEEDED',
          `A seller may have at most ${productsPerSeller} products (not counting deleted ones)`,
        );
      }
    },

    /** Call in the upload's transaction (after lockSeller) before inserting the rows. 409 when the bytes do not fit. */
    async reserveImageBytes(trx: Trx, sellerId: number, bytes: number): Promise<void> {
      await lockSeller(trx, sellerId);
      const [{ used }] = (await trx('product_images')
        .join('products', 'products.id', 'product_images.product_id')
        .where('products.seller_id', sellerId)
        .sum({ used: 'product_images.byte_size' })) as Array<{ used: number | string | null }>;
      const total = Number(used ?? 0);
      if (total + bytes > imageBytesPerSeller) {
        throw new ConflictError(
          'IMAGE_QUOTA_EXCEEDED',
          `A seller's images may take at most ${imageBytesPerSeller} bytes (${total} used, ${bytes} sent after re-encoding)`,
        );
      }
    },
  };
}

export type SellerQuotas = ReturnType<typeof createSellerQuotas>;
