// Product images: upload (all-or-nothing, at most 5 per product), delete, and the read side of the static
// `/uploads` files. Files live under UPLOAD_DIR/products/<productId>/<uuid>.<ext>; a row in product_images
// exists exactly for each file the service moved there. Rows are written in the same transaction that
// checked the product and counted its images, and files are moved before the commit and removed again if
// anything fails, so rows and files never disagree.
import crypto from 'node:crypto';
import type { ReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { AuthMember } from '../auth/tokens';
import type { Config } from '../config';
import type { Db, Trx } from '../db';
import { BadRequestError, ForbiddenError, NotFoundError, ServiceUnavailableError } from '../errors';
import {
  CommitNotApplied,
  outcomeRead,
  transactionWithOutcome,
  type OutcomeOptions,
} from '../commit-outcome';
import type { EventBus } from '../events';
import type { Logger } from '../logger';
import type { ProductImage } from '../products/product-model';
import { allowedExtension, contentTypeOf, EXTENSION_FORMATS, sniffFile, STORED_NAME } from './image-files';
import { reencodeImage, type ProcessedImage } from './image-processing';
import { MAX_IMAGES_PER_PRODUCT, uploadTmpRoot, type IncomingFile } from './image-upload';
import { createImageRepository, type ProductOwnership } from './image-repository';
import { createKeyedMutex } from './keyed-mutex';
import type { SellerQuotas } from '../products/seller-quotas';
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
  quotas: SellerQuotas;
}

export function toImageJson(image: ProductImage): ImageJson {
  return { id: image.id, imageUrl: image.imageUrl, displayOrder: image.displayOrder };
}

/** A stored file without its row is left this long: an upload moves its files before its commit. */
export const ORPHAN_FILE_MIN_AGE_MS = 60 * 60 * 1000;
/** Product directories read per batch of the orphan pass (one query for their rows). */
const ORPHAN_SCAN_BATCH = 200;

export function createImageService({ config, db, logger, events, quotas }: ImageServiceDeps) {
  const log = logger.child({ component: 'ImageService' });
  const productsDir = path.join(config.uploadDir, 'products');
  const exclusive = createKeyedMutex<number>();
  const repository = createImageRepository(db);

  const productDir = (productId: number) => path.join(productsDir, String(productId));
  const publicUrl = (productId: number, storedName: string) => `/uploads/products/${productId}/${storedName}`;

  /**
   * 404 for an unknown or deleted product, 403 for any other seller's product, DRAFTs included: the same
   * answers as PATCH/DELETE of the product (API.md: 403 for not the owner of an existing product).
   */
  function assertOwner(product: ProductOwnership | undefined, seller: AuthMember): void {
    if (!product || product.status === 'DELETED') throw new NotFoundError('Product not found');
    if (product.sellerId !== seller.id)
      throw new ForbiddenError('Only the seller of this product may change its images');
  }

  async function listImages(productId: number, trx?: Trx): Promise<ImageJson[]> {
    return (await repository.listImages(productId, trx)).map(toImageJson);
  }

  /**
   * Every file must carry an allowed extension, be, by its first bytes, the format that extension names,
   * and decode as that format within the pixel cap; what is stored is its re-encoded copy (next to the
   * upload in the request's temporary directory until the transaction moves it).
   */
  async function checkFiles(files: IncomingFile[]): Promise<Array<ProcessedImage & { ext: string }>> {
    const accepted: Array<ProcessedImage & { ext: string }> = [];
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
      const processed = await reencodeImage(file.path, `${file.path}.clean`, format, {
        maxPixels: config.uploadMaxPixels,
        label: path.basename(file.originalName),
      });
      accepted.push({ ...processed, ext });
    }
    return accepted;
  }

  /** Removes the files, logging (not throwing) a failure; returns how many went. */
  async function removeQuietly(filePaths: string[]): Promise<number> {
    let removed = 0;
    for (const filePath of filePaths) {
      await fs.rm(filePath, { force: true }).then(
        () => (removed += 1),
        (err) => log.warn({ err, filePath }, 'Could not remove an image file'),
      );
    }
    return removed;
  }

  /** Locks the live product for this transaction (see the repository) and checks its owner. */
  async function lockOwnedProduct(trx: Trx, productId: number, seller: AuthMember): Promise<void> {
    assertOwner(await repository.lockLiveProduct(trx, productId), seller);
  }

  /**
   * A DELETED product's images go, rows then files (they are never served again), which frees their bytes in
   * the seller's quota and on disk. Called right after the soft delete; nothing for a live product.
   */
  async function purgeDeletedProduct(productId: number): Promise<number> {
    const names = await exclusive(productId, () =>
      db.transaction((trx) => repository.deleteImagesOfDeletedProduct(trx, productId)),
    );
    const stored = names.filter((name) => STORED_NAME.test(name));
    await removeQuietly(stored.map((name) => path.join(productDir(productId), name)));
    await fs.rmdir(productDir(productId)).catch(() => undefined); // only when empty
    if (names.length > 0)
      log.info({ productId, count: names.length }, `Removed the images of deleted product ${productId}`);
    return names.length;
  }

  return {
    purgeDeletedProduct,

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
      assertOwner(await repository.findOwnership(productId), seller);
    },

    /** Stores 1-5 parsed files for the product, all or nothing; returns all of the product's images. */
    async upload(productId: number, seller: AuthMember, files: IncomingFile[]): Promise<ImageJson[]> {
      const accepted = await checkFiles(files);
      const moved: string[] = [];
      const storedNames: string[] = [];
      let outcomeUnknown = false;
      // A COMMIT whose answer was lost may have applied: its rows are looked for before the files are removed
      // (lib/commit-outcome.ts), so no row ever points at a file that is gone.
      const outcome: OutcomeOptions<ImageJson[]> = {
        db,
        logger,
        committed: async () =>
          Number(
            (
              await outcomeRead(
                db,
                db('product_images').where('product_id', productId).whereIn('file_name', storedNames),
              ).count({ n: '*' })
            )[0].n,
          ) === storedNames.length,
        unknown: () => {
          outcomeUnknown = true;
          return new ServiceUnavailableError(
            "The database connection was lost while the images were stored; read the product's images before retrying",
            1,
          );
        },
      };
      const images = await exclusive(productId, async () => {
        try {
          return await transactionWithOutcome(outcome, async (trx) => {
            // The product first, then the seller (the image-bytes quota), as an order batch takes them: it holds
            // the product's row, then reads the seller's row for its foreign key. The other way round the two
            // deadlocked and the upload, InnoDB's victim, answered 503.
            await lockOwnedProduct(trx, productId, seller);
            await quotas.lockSeller(trx, seller.id);
            // The transaction's first plain read, after the product's lock: it sees every upload committed before.
            const { count, maxOrder } = await repository.countImages(trx, productId);
            if (count + files.length > MAX_IMAGES_PER_PRODUCT) {
              throw new BadRequestError(
                'IMAGE_LIMIT_EXCEEDED',
                `A product has at most ${MAX_IMAGES_PER_PRODUCT} images (it has ${count}, ${files.length} sent)`,
              );
            }
            const bytes = accepted.reduce((sum, image) => sum + image.bytes, 0);
            await quotas.reserveImageBytes(trx, seller.id, bytes);
            await fs.mkdir(productDir(productId), { recursive: true });
            const now = new Date();
            let order = maxOrder;
            for (const image of accepted) {
              const storedName = `${crypto.randomUUID()}.${image.ext}`;
              const target = path.join(productDir(productId), storedName);
              await fs.rename(image.path, target);
              moved.push(target);
              storedNames.push(storedName);
              order += 1;
              await repository.insertImage(trx, {
                productId,
                imageUrl: publicUrl(productId, storedName),
                fileName: storedName,
                displayOrder: order,
                byteSize: image.bytes,
                createdAt: now,
              });
            }
            return listImages(productId, trx);
          });
        } catch (err) {
          // The rows may exist (the outcome of a lost COMMIT is unknown): their files stay, and the product is
          // announced, so no cache keeps its old images list should they exist.
          if (outcomeUnknown) {
            await events
              .emit('productsChanged', { productIds: [productId], origin: 'images', scope: 'images' })
              .catch((failure: unknown) =>
                log.error({ err: failure, productId }, 'Announcing the images failed'),
              );
            throw err;
          }
          // The transaction rolled back (or never committed): the moved files must go too.
          await removeQuietly(moved);
          if (err instanceof CommitNotApplied) {
            throw new ServiceUnavailableError(
              'The database connection was lost before the images were stored; please retry',
              1,
            );
          }
          throw err;
        }
      });
      log.info(
        { productId, count: files.length },
        `Stored ${files.length} image(s) for product ${productId}`,
      );
      await events.emit('productsChanged', { productIds: [productId], origin: 'images', scope: 'images' });
      return images;
    },

    /** Deletes one image of the seller's product: the row first (committed), then the file. */
    async remove(productId: number, imageId: number, seller: AuthMember): Promise<void> {
      const storedName = await exclusive(productId, () =>
        db.transaction(async (trx) => {
          await lockOwnedProduct(trx, productId, seller);
          const fileName = await repository.deleteImage(trx, productId, imageId);
          if (fileName === undefined) throw new NotFoundError('Image not found');
          return fileName;
        }),
      ).catch(async (err: unknown) => {
        // A COMMIT whose answer was lost may have deleted the row: the product is announced all the same, so no
        // cache keeps listing an image whose URL no longer serves it.
        if (!(err instanceof NotFoundError) && !(err instanceof ForbiddenError))
          await events
            .emit('productsChanged', { productIds: [productId], origin: 'images', scope: 'images' })
            .catch((failure: unknown) =>
              log.error({ err: failure, productId }, 'Announcing the images failed'),
            );
        throw err;
      });
      // After the commit: a crash here leaves an orphan file, never a row pointing at a missing file.
      if (STORED_NAME.test(storedName)) await removeQuietly([path.join(productDir(productId), storedName)]);
      await events.emit('productsChanged', { productIds: [productId], origin: 'images', scope: 'images' });
    },

    /**
     * The pruner's pass: the images of DELETED products that no purge reached (a process stopped between the
     * soft delete and its purge). Returns how many rows went; no further batch once `signal` is aborted.
     */
    async pruneDeletedProducts(signal?: AbortSignal): Promise<number> {
      let removed = 0;
      for (;;) {
        if (signal?.aborted) return removed; // the rest is for the next pass
        const productIds = await repository.deletedProductsWithImages(100);
        if (productIds.length === 0) return removed;
        let batch = 0;
        for (const productId of productIds) batch += await purgeDeletedProduct(productId);
        if (batch === 0) return removed; // nothing could go: never loop on the same rows
        removed += batch;
      }
    },

    /**
     * The pruner's pass over the disk: stored files that no image row names and that are older than
     * `minAgeMs`. They are what a process that stopped left behind: between a purge's or a delete's commit and
     * its file removal, or between an upload's file move and its commit. They are never served (openFile asks for
     * the row) and count in no quota (rows do), so they only take disk. Only where UPLOAD_DIR is this database's
     * alone (PRUNE_ORPHAN_IMAGE_FILES): another database's files there have no row here either, and product ids
     * overlap. Younger files may belong to an upload in flight, here or in another process sharing UPLOAD_DIR
     * (moved before its commit), so they stay; the files are listed before the rows are read, so a row committed
     * meanwhile is seen. Returns how many files went; no further batch once `signal` is aborted.
     */
    async pruneOrphanFiles(signal?: AbortSignal, minAgeMs = ORPHAN_FILE_MIN_AGE_MS): Promise<number> {
      const productIds = (await fs.readdir(productsDir).catch(() => [] as string[]))
        .filter((entry) => /^[1-9][0-9]{0,9}$/.test(entry))
        .map(Number);
      let removed = 0;
      for (let i = 0; i < productIds.length; i += ORPHAN_SCAN_BATCH) {
        if (signal?.aborted) break; // the rest is for the next pass
        const batch = productIds.slice(i, i + ORPHAN_SCAN_BATCH);
        const old: Array<{ productId: number; name: string }> = [];
        for (const productId of batch) {
          for (const name of await fs.readdir(productDir(productId)).catch(() => [] as string[])) {
            if (!STORED_NAME.test(name)) continue;
            const stat = await fs.stat(path.join(productDir(productId), name)).catch(() => null);
            if (stat?.isFile() && Date.now() - stat.mtimeMs >= minAgeMs) old.push({ productId, name });
          }
        }
        if (old.length === 0) continue;
        const named = await repository.namedFiles([...new Set(old.map((file) => file.productId))]);
        const orphans = old.filter(({ productId, name }) => !named.has(`${productId}/${name}`));
        removed += await removeQuietly(
          orphans.map(({ productId, name }) => path.join(productDir(productId), name)),
        );
      }
      if (removed > 0) log.info(`Removed ${removed} image file(s) that no image row names`);
      return removed;
    },

    /**
     * Opens a stored image for the static route; 404 for any name that is not `<uuid>.<ext>`, not named by an
     * image row or not on disk, and for every file of an unknown or DELETED product. A DRAFT's images are
     * served: their names are unguessable UUIDs, known only to whoever was shown them.
     */
    async openFile(productId: number, fileName: string): Promise<StoredFile> {
      if (!STORED_NAME.test(fileName)) throw new NotFoundError('File not found');
      // Only a file an image row names: one whose row is gone (a delete whose file removal failed, an upload
      // whose outcome was unknown and did not commit) is never served. One indexed lookup.
      const status = await repository.findImageProductStatus(productId, fileName);
      if (status === undefined || status === 'DELETED') throw new NotFoundError('File not found');
      const filePath = path.join(productDir(productId), fileName);
      // Belt and braces: the name pattern already rules out separators and dots-only segments.
      if (path.dirname(filePath) !== productDir(productId)) throw new NotFoundError('File not found');
      // Opened here, not by the stream when it first reads: a file deleted meanwhile is a 404 now, never a stream
      // error after the 200's headers were decided.
      let handle: fs.FileHandle;
      try {
        handle = await fs.open(filePath, 'r');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new NotFoundError('File not found');
        throw err;
      }
      try {
        const stat = await handle.stat();
        if (!stat.isFile()) throw new NotFoundError('File not found');
        return { stream: handle.createReadStream(), size: stat.size, contentType: contentTypeOf(fileName) };
      } catch (err) {
        await handle.close();
        throw err;
      }
    },
  };
}

export type ImageService = ReturnType<typeof createImageService>;
