// Request schemas (yup, strict) and the category shape of the category endpoints.
import * as yup from 'yup';
import { id, maxChars, strictObject } from '../http/validate';
import { idField, intField, stringField } from '../http/response-fields';

export const createCategoryBody = strictObject({
  name: yup
    .string()
    // Trim only real strings: a number must not become a name.
    .transform((_value, original) => (typeof original === 'string' ? original.trim() : original))
    .typeError('name must be a string')
    .required('name is required')
    .min(1, 'name must not be blank')
    .test(maxChars(100, 'name must be at most 100 characters')),
  parentId: id()
    .nullable()
    .optional()
    .meta({ description: 'An existing category (400 otherwise); null or absent for a top-level one' }),
  displayOrder: yup
    .number()
    // Reject strings rather than coerce them ("strict" would also skip the default).
    .transform((value, original) => (original === undefined || typeof original === 'number' ? value : NaN))
    .typeError('displayOrder must be an integer')
    .integer('displayOrder must be an integer')
    .min(-1_000_000, 'displayOrder must be at least -1000000')
    .max(1_000_000, 'displayOrder must be at most 1000000')
    .default(0),
}).meta({
  description:
    'The name must be unique under its parent (409 DUPLICATE_CATEGORY), ignoring case and Unicode normalization ("Café" written as one code point or as "e" and a combining accent is one name); names that differ by an accent ("Cafe", "Café") are two',
  example: { name: 'Garden', parentId: 5, displayOrder: 3 },
});

export type CreateCategoryInput = yup.InferType<typeof createCategoryBody>;

export const categoryShape = yup
  .object({
    id: idField(),
    name: stringField(),
    parentId: idField().nullable().meta({ description: 'null for a top-level category' }),
    displayOrder: intField(),
  })
  .noUnknown()
  .meta({ component: 'Category', example: { id: 2, name: 'Phones', parentId: 1, displayOrder: 1 } });
export type CategoryJson = yup.InferType<typeof categoryShape>;

export const categoryListShape = yup.array(categoryShape).defined();
