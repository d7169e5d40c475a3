// Request schemas (yup) and response JSON Schemas of the image routes.
import * as yup from 'yup';
import type { JsonSchema } from '../http/route';
import { id, strictObject } from '../http/validate';

export const productImagesParams = strictObject({ productId: id().required() });
export const productImageParams = strictObject({ productId: id().required(), imageId: id().required() });
// The file name is checked by the service (anything that is not `<uuid>.<ext>` is a plain 404).
export const uploadedFileParams = strictObject({ productId: id().required(), file: yup.string().required() });

export const imageJsonSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'imageUrl', 'displayOrder'],
  properties: {
    id: { type: 'integer' },
    imageUrl: { type: 'string', example: '/uploads/products/1/0b9d6c1e-3f0a-4c55-9a8e-2f1f0e6f2a11.png' },
    displayOrder: { type: 'integer' },
  },
};

export const imageListSchema: JsonSchema = {
  type: 'object',
  required: ['images'],
  properties: { images: { type: 'array', items: imageJsonSchema, maxItems: 5 } },
};

export const binaryFileSchema: JsonSchema = { type: 'string', format: 'binary' };
