// Request schemas (yup, strict) and response JSON Schemas of the category endpoints.
import * as yup from 'yup';
import { id, strictObject } from '../http/validate';
import type { JsonSchema } from '../http/route';

export const createCategoryBody = strictObject({
  name: yup
    .string()
    // Trim only real strings: a number must not become a name.
    .transform((_value, original) => (typeof original === 'string' ? original.trim() : original))
    .typeError('name must be a string')
    .required('name is required')
    .min(1, 'name must not be blank')
    .max(100, 'name must be at most 100 characters'),
  parentId: id().nullable().optional(),
  displayOrder: yup
    .number()
    // Reject strings rather than coerce them ("strict" would also skip the default).
    .transform((value, original) => (original === undefined || typeof original === 'number' ? value : NaN))
    .typeError('displayOrder must be an integer')
    .integer('displayOrder must be an integer')
    .min(-1_000_000, 'displayOrder must be at least -1000000')
    .max(1_000_000, 'displayOrder must be at most 1000000')
    .default(0),
});

export type CreateCategoryInput = yup.InferType<typeof createCategoryBody>;

export const categorySchema: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'parentId', 'displayOrder'],
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    parentId: { type: ['integer', 'null'] },
    displayOrder: { type: 'integer' },
  },
};

export const categoryListSchema: JsonSchema = { type: 'array', items: categorySchema };
