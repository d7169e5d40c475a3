// Product images: upload (all-or-nothing, at most 5 per product), delete, and the read side of the static
// `/uploads` files. Files live under UPLOAD_DIR/products/<productId>/<uuid>.<ext>; a row in product_images
// exists exactly for each file the service moved there. Rows are written in the same transaction that
// checked the product and counted its images, and files are moved before the commit and removed again if
// anything fails, so rows and files never disagree.
import crypto from 'node:crypto';
import { createReadStream, type ReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { AuthMember } from '../auth/tokens';
import type { Config } from '../config';
import { affectedRows, type Db, type Trx } from '../db';
import { BadRequestError, ForbiddenError, NotFoundError } from '../errors';
import type { EventBus } from '../events';
import type { Logger } from '../logger';
import { Product, ProductImage } from '../products/product-model';
import { allowedExtension, contentTypeOf, EXTENSION_FORMATS, sniffFile, STORED_NAME } from './image-files';
import { MAX_IMAGES_PER_PRODUCT, uploadTmpRoot, type IncomingFile } from './image-upload';
import { createKeyedMutex } from './keyed-mutex';
import type { ImageJson } from './image-schemas';

export type { ImageJson };

export interface StoredFile {
  stream: ReadStream;
  size: number;
  contentType: string;
}

export interface ImageServiceDeps {
  config: Config;
  db: Db;
  logger: Logger;
  events: EventBus;
}

export function toImageJson(image: ProductImage): ImageJson {
  return { id: image.id, imageUrl: image.imageUrl, displayOrder: image.displayOrder };
}

export function createImageService({ config, db, logger, events }: ImageServiceDeps) {
  const log = logger.child({ component: 'ImageService' });
  const productsDir = path.join(config.uploadDir, 'products');
  const exclusive = createKeyedMutex<number>();

  const productDir = (productId: number) => path.join(productsDir, String(productId));
  const publicUrl = (productId: number, storedName: string) => `/uploads/products/${productId}/${storedName}`;

  /**
   * 404 for an unknown or deleted product, 403 for any other seller's product, DRAFTs included: the same
   * answers as PATCH/DELETE of the product (API.md: 403 for not the owner of an existing product).
   */
  function assertOwner(product: Pick<Product, 'sellerId' | 'status'> | undefined, seller: AuthMember): void {
    if (!product || product.status === 'DELETED') throw new NotFoundError('Product not found');
    if (product.sellerId !== seller.id)
      throw new ForbiddenError('Only the seller of this product may change its images');
  }

  async function listImages(productId: number, trx?: Trx): Promise<ImageJson[]> {
    const images = await ProductImage.query(trx ?? db)
      .where('product_id', productId)
      .orderBy([{ column: 'display_order' }, { column: 'id' }]);
    return images.map(toImageJson);
  }

  /** Every file must carry an allowed extension and be, by its first bytes, the format that extension names. */
  async function checkFiles(files: IncomingFile[]): Promise<string[]> {
    const extensions: string[] = [];
    for (const file of files) {
      const ext = allowedExtension(file.originalName);
      if (!ext) {
        throw new BadRequestError(
          'INVALID_FILE_TYPE',
          `"${path.basename(file.originalName)}" is not a jpg, jpeg, png or gif file`,
        );
      }
      const format = await sniffFile(file.path);
      if (format !== EXTENSION_FORMATS[ext]) {
        throw new BadRequestError(
          'INVALID_FILE_TYPE',
          `The content of "${path.basename(file.originalName)}" is not a ${ext} image`,
        );
      }
      extensions.push(ext);
    }
    return extensions;
  }

  async function removeQuietly(filePaths: string[]): Promise<void> {
    for (const filePath of filePaths) {
      await fs
        .rm(filePath, { force: true })
        .catch((err) => log.warn({ err, filePath }, 'Could not remove an image file'));
    }
  }

  /**
   * Locks the product for this transaction: the first statement is a write on the product row, which holds
   * the row lock on MySQL until commit and takes SQLite's write lock up front, so two uploads for one product
   * (even from two processes) count and insert one after the other and never exceed the limit together.
   */
  async function lockOwnedProduct(trx: Trx, productId: number, seller: AuthMember): Promise<void> {
    const touched = affectedRows(
      await trx('products')
        .where('id', productId)
        .whereNot('status', 'DELETED')
        .update({ updated_at: new Date() }),
    );
    const product = touched > 0 ? await Product.query(trx).findById(productId).forUpdate() : undefined;
    assertOwner(product, seller);
  }

  return {
    /** Where uploads live; the multipart parser streams into a temporary directory below it. */
    uploadDir: config.uploadDir,
    listImages,

    /**
     * Removes temporary upload directories older than `maxAgeMs`: what a crashed process left behind. Younger
     * ones may belong to uploads in flight in another process sharing UPLOAD_DIR, so they stay.
     */
    async sweepStaleUploads(maxAgeMs = 60 * 60 * 1000): Promise<number> {
      const tmpRoot = uploadTmpRoot(config.uploadDir);
      const entries = await fs.readdir(tmpRoot).catch(() => [] as string[]);
      let removed = 0;
      for (const entry of entries) {
        const entryPath = path.join(tmpRoot, entry);
        const stat = await fs.stat(entryPath).catch(() => null);
        if (!stat || Date.now() - stat.mtimeMs < maxAgeMs) continue;
        await fs.rm(entryPath, { recursive: true, force: true });
        removed += 1;
      }
      if (removed > 0) log.info(`Removed ${removed} stale temporary upload(s)`);
      return removed;
    },

    /** Cheap early check (before the body is parsed), so a stranger's upload is refused before it is streamed. */
    async checkCanUpload(productId: number, seller: AuthMember): Promise<void> {
      assertOwner(await Product.query(db).findById(productId).select('seller_id', 'status'), seller);
    },

    /** Stores 1-5 parsed files for the product, all or nothing; returns all of the product's images. */
    async upload(productId: number, seller: AuthMember, files: IncomingFile[]): Promise<ImageJson[]> {
      const extensions = await checkFiles(files);
      const moved: string[] = [];
      const images = await exclusive(productId, async () => {
        try {
          return await db.transaction(async (trx) => {
            await lockOwnedProduct(trx, productId, seller);
            const [{ count, maxOrder }] = (await trx('product_images')
              .where('product_id', productId)
              .count({ count: '*' })
              .max({ maxOrder: 'display_order' })
              // A locking read on MySQL: the count is of committed rows, whatever this transaction's snapshot.
              .forUpdate()) as Array<{
              count: number | string;
              maxOrder: number | null;
            }>;
            if (Number(count) + files.length > MAX_IMAGES_PER_PRODUCT) {
              throw new BadRequestError(
                'IMAGE_LIMIT_EXCEEDED',
                `A product has at most ${MAX_IMAGES_PER_PRODUCT} images (it has ${Number(count)}, ${files.length} sent)`,
              );
            }
            await fs.mkdir(productDir(productId), { recursive: true });
            const now = new Date();
            let order = Number(maxOrder ?? 0);
            for (const [index, file] of files.entries()) {
              const storedName = `${crypto.randomUUID()}.${extensions[index]}`;
              const target = path.join(productDir(productId), storedName);
              await fs.rename(file.path, target);
              moved.push(target);
              order += 1;
              await trx('product_images').insert({
                product_id: productId,
                image_url: publicUrl(productId, storedName),
                file_name: storedName,
                display_order: order,
                created_at: now,
              });
            }
            return listImages(productId, trx);
          });
        } catch (err) {
          // The transaction rolled back (or never committed): the moved files must go too.
          await removeQuietly(moved);
          throw err;
        }
      });
      log.info(
        { productId, count: files.length },
        `Stored ${files.length} image(s) for product ${productId}`,
      );
      await events.emit('productChanged', { productId });
      return images;
    },

    /** Deletes one image of the seller's product: the row first (committed), then the file. */
    async remove(productId: number, imageId: number, seller: AuthMember): Promise<void> {
      const storedName = await exclusive(productId, () =>
        db.transaction(async (trx) => {
          await lockOwnedProduct(trx, productId, seller);
          const image = await ProductImage.query(trx).findById(imageId).where('product_id', productId);
          if (!image) throw new NotFoundError('Image not found');
          await ProductImage.query(trx).deleteById(imageId);
          return image.fileName;
        }),
      );
      // After the commit: a crash here leaves an orphan file, never a row pointing at a missing file.
      if (STORED_NAME.test(storedName)) await removeQuietly([path.join(productDir(productId), storedName)]);
      await events.emit('productChanged', { productId });
    },

    /**
     * Opens a stored image for the static route; 404 for any name that is not `<uuid>.<ext>` or not on disk,
     * and for every file of an unknown or DELETED product (its files stay on disk). A DRAFT's images are
     * served: their names are unguessable UUIDs, known only to whoever was shown them.
     */
    async openFile(productId: number, fileName: string): Promise<StoredFile> {
      if (!STORED_NAME.test(fileName)) throw new NotFoundError('File not found');
      // One primary-key lookup.
      const product = await db('products').where('id', productId).first('status');
      if (!product || product.status === 'DELETED') throw new NotFoundError('File not found');
      const filePath = path.join(productDir(productId), fileName);
      // Belt and braces: the name pattern already rules out separators and dots-only segments.
      if (path.dirname(filePath) !== productDir(productId)) throw new NotFoundError('File not found');
      let size: number;
      try {
        const stat = await fs.stat(filePath);
        if (!stat.isFile()) throw new NotFoundError('File not found');
        size = stat.size;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new NotFoundError('File not found');
        throw err;
      }
      return { stream: createReadStream(filePath), size, contentType: contentTypeOf(fileName) };
    },
  };
}

export type ImageService = ReturnType<typeof createImageService>;
