// Request schemas (yup) of the image routes and the one image shape, which products embed too.
import * as yup from 'yup';
import { idField, intField, stringField } from '../http/response-fields';
import { id, strictObject } from '../http/validate';
import { MAX_IMAGES_PER_PRODUCT } from './image-upload';

export const productImagesParams = strictObject({
  productId: id().required().meta({ description: 'The product (its seller only)', example: 1 }),
});
export const productImageParams = strictObject({
  productId: id().required().meta({ description: 'The product (its seller only)', example: 1 }),
  imageId: id().required().meta({ description: 'An image of that product', example: 1 }),
});
// The file name is checked by the service (anything that is not `<uuid>.<ext>` is a plain 404).
export const uploadedFileParams = strictObject({
  productId: id().required().meta({ description: 'The product the image belongs to', example: 1 }),
  file: yup.string().required().meta({
    description: 'The stored name, `<uuid>.<ext>`, as in an image’s imageUrl',
    example: '0b9d6c1e-3f0a-4c55-9a8e-2f1f0e6f2a11.png',
  }),
});

export const imageShape = yup
  .object({
    id: idField(),
    imageUrl: stringField().meta({ description: 'Where GET serves the file (public, immutable)' }),
    displayOrder: intField().meta({ description: 'Upload order within the product, from 1' }),
  })
  .meta({
    component: 'Image',
    example: {
      id: 1,
      imageUrl: '/uploads/products/1/0b9d6c1e-3f0a-4c55-9a8e-2f1f0e6f2a11.png',
      displayOrder: 1,
    },
  });
export type ImageJson = yup.InferType<typeof imageShape>;

export const imageListShape = yup
  .object({
    images: yup.array(imageShape).max(MAX_IMAGES_PER_PRODUCT).defined(),
  })
  .meta({ component: 'ImageList', description: "All of the product's images, by displayOrder then id" });

/** The multipart body of an upload: 1-5 files in the field `images`. */
export const IMAGE_UPLOAD_SCHEMA = {
  type: 'object',
  required: ['images'],
  properties: {
    images: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_IMAGES_PER_PRODUCT,
      items: { type: 'string', format: 'binary', contentMediaType: 'application/octet-stream' },
      description: `jpg, jpeg, png or gif files, 10 MB each, at most ${MAX_IMAGES_PER_PRODUCT} per product`,
    },
  },
};

export const binaryFileSchema = { type: 'string', format: 'binary' };
