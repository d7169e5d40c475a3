// Image routes: upload and delete under /api/v1, and the public, read-only /uploads files.
import { defineRoute, errorResponses, lostCommit, unavailable, type RouteDef } from '../lib/http/route';
import {
  binaryFileSchema,
  IMAGE_UPLOAD_SCHEMA,
  imageListShape,
  productImageParams,
  productImagesParams,
  uploadedFileParams,
} from '../lib/images/image-schemas';
import { createImageUploadParser, incomingFiles } from '../lib/http/image-upload-parser';
import type { Services } from '../lib/services';

// Uploaded names are random UUIDs, so a file's bytes never change: clients and proxies may keep it.
const FILE_CACHE_CONTROL = 'public, max-age=31536000, immutable';

export function imageRoutes(services: Pick<Services, 'images'>): RouteDef[] {
  return [
    defineRoute({
      method: 'post',
      path: '/products/:productId/images',
      summary:
        'Upload 1-5 images of a product (multipart field "images"; jpg, jpeg, png, gif; 10 MB each; 5 per product)',
      tags: ['Images'],
      auth: ['SELLER'],
      params: productImagesParams,
      requestContentType: 'multipart/form-data',
      requestSchema: IMAGE_UPLOAD_SCHEMA,
      requestEncoding: { images: { contentType: 'image/jpeg, image/png, image/gif' } },
      // Refuses a stranger's or unknown product before its body is streamed to disk (the service checks
      // again, authoritatively, inside the transaction).
      beforeBody: ({ params, auth }) => services.images.checkCanUpload(params.productId, auth),
      before: [createImageUploadParser(services.images.uploadDir)],
      responses: {
        201: { description: "All of the product's images, by displayOrder then id", schema: imageListShape },
        ...errorResponses(
          [
            400,
            'VALIDATION_ERROR (no files in "images", or any other field), INVALID_FILE_TYPE (also undecodable), IMAGE_LIMIT_EXCEEDED (also over the pixel cap)',
          ],
          [403, 'Not a seller, or not the owner of the product, a DRAFT included (FORBIDDEN)'],
          [404, 'Unknown or deleted product (NOT_FOUND)'],
          [409, "IMAGE_QUOTA_EXCEEDED: the seller's stored images would exceed SELLER_MAX_IMAGE_BYTES"],
          [
            413,
            'A file is over 10 MB (FILE_TOO_LARGE), or the declared body over any form (PAYLOAD_TOO_LARGE)',
          ],
          [415, 'Not multipart/form-data (UNSUPPORTED_MEDIA_TYPE)'],
          unavailable(lostCommit("the product's images")),
        ),
      },
      handler: async ({ params, auth }, ctx) => {
        const images = await services.images.upload(params.productId, auth, incomingFiles(ctx));
        ctx.status = 201;
        ctx.body = { images };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/products/:productId/images/:imageId',
      summary: 'Delete one image of a product (row and file)',
      tags: ['Images'],
      auth: ['SELLER'],
      params: productImageParams,
      responses: {
        204: { description: 'Deleted' },
        ...errorResponses(
          400,
          [403, 'Not a seller, or not the owner of the product, a DRAFT included (FORBIDDEN)'],
          [404, 'Unknown or deleted product, or unknown image (NOT_FOUND)'],
        ),
      },
      handler: async ({ params, auth }, ctx) => {
        await services.images.remove(params.productId, params.imageId, auth);
        ctx.status = 204;
      },
    }),
  ];
}

/** Non-API routes (mounted without the /api/v1 prefix). */
export function uploadRoutes(services: Pick<Services, 'images'>): RouteDef[] {
  return [
    defineRoute({
      method: 'get',
      path: '/uploads/products/:productId/:file',
      summary: 'A stored product image (read-only; names are <uuid>.<ext>)',
      tags: ['Images'],
      auth: 'public',
      params: uploadedFileParams,
      responses: {
        200: {
          description: 'The image bytes (image/jpeg, image/png or image/gif)',
          contentType: 'image/*',
          schema: binaryFileSchema,
        },
        ...errorResponses([
          404,
          'No such file, a name that is not <uuid>.<ext>, or the product is unknown or DELETED (NOT_FOUND)',
        ]),
      },
      handler: async ({ params }, ctx) => {
        const file = await services.images.openFile(params.productId, params.file);
        ctx.set('Content-Type', file.contentType);
        ctx.set('Content-Length', String(file.size));
        ctx.set('X-Content-Type-Options', 'nosniff');
        ctx.set('Cache-Control', FILE_CACHE_CONTROL);
        ctx.body = file.stream;
      },
    }),
  ];
}
