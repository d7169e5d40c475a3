// Request schemas (yup, strict: unknown fields are a 400) and response JSON Schemas of the product endpoints.
import * as yup from 'yup';
import { id, integer, strictObject } from '../http/validate';
import { pageEnvelopeSchema, pageQueryFields } from '../http/pagination';
import type { JsonSchema } from '../http/route';
import { PRODUCT_STATUSES } from './product-model';

export const MAX_PRICE_CENTS = 999_999_999_999; // DECIMAL(12,2)
export const MAX_STOCK = 1_000_000_000;
export const SORT_FIELDS = ['createdAt', 'price', 'salesCount'] as const;
export type SortField = (typeof SORT_FIELDS)[number];

/** JSON numbers only: a string such as "5" is a type error, not coerced (and defaults still apply). */
const onlyNumbers = (value: unknown, original: unknown) =>
  original === undefined || original === null || typeof original === 'number' ? value : NaN;

const trimmedString = (field: string, max: number) =>
  yup
    .string()
    // Trim only real strings: a number must not be coerced into a name.
    .transform((_value, original) => (typeof original === 'string' ? original.trim() : original))
    .typeError(`${field} must be a string`)
    .max(max, `${field} must be at most ${max} characters`);

/**
 * A JSON number with at most 2 decimals, > 0. `Math.round(v * 100) / 100 === v` is exact below 2^53/100:
 * a value with 2 decimals is the double nearest to cents/100, which the division reproduces exactly, and
 * any other double differs from it (an absolute tolerance rejected large valid prices such as 1234567890.12).
 */
const price = () =>
  yup
    .number()
    .transform(onlyNumbers)
    .typeError('price must be a number')
    .test(
      'two-decimals',
      'price must have at most 2 decimals',
      (v) => v === undefined || v === null || Math.round(v * 100) / 100 === v,
    )
    .test(
      'range',
      `price must be between 0.01 and ${MAX_PRICE_CENTS / 100}`,
      (v) =>
        v === undefined || v === null || (Math.round(v * 100) >= 1 && Math.round(v * 100) <= MAX_PRICE_CENTS),
    );

const stockQuantity = () =>
  yup
    .number()
    .transform(onlyNumbers)
    .typeError('stockQuantity must be an integer')
    .integer('stockQuantity must be an integer')
    .min(0, 'stockQuantity must be at least 0')
    .max(MAX_STOCK, `stockQuantity must be at most ${MAX_STOCK}`);

/** Sellers choose only between DRAFT and ON_SALE; SOLD_OUT is the system's, DELETED is DELETE's. */
const listingStatus = () =>
  yup
    .string()
    .transform((value, original) => (original === undefined || typeof original === 'string' ? value : NaN))
    .typeError('status must be a string')
    .oneOf(['DRAFT', 'ON_SALE'] as const, 'status must be DRAFT or ON_SALE');

export const createProductBody = strictObject({
  categoryId: id().required('categoryId is required'),
  name: trimmedString('name', 200).required('name is required').min(1, 'name must not be blank'),
  description: trimmedString('description', 5000).nullable().optional(),
  price: price().required('price is required'),
  stockQuantity: stockQuantity().required('stockQuantity is required'),
  status: listingStatus().default('ON_SALE'),
});
export type CreateProductInput = yup.InferType<typeof createProductBody>;

export const updateProductBody = strictObject({
  categoryId: id().optional(),
  name: trimmedString('name', 200).min(1, 'name must not be blank').optional(),
  description: trimmedString('description', 5000).nullable().optional(),
  price: price().optional(),
  stockQuantity: stockQuantity().optional(),
  status: listingStatus().optional(),
}).test('not-empty', 'at least one field must be given', (value) =>
  Object.values(value ?? {}).some((v) => v !== undefined),
);
export type UpdateProductInput = yup.InferType<typeof updateProductBody>;

export const productIdParams = strictObject({ productId: id().required() });

/** A decimal query value (`10`, `10.5`, `10.50`) turned into integer cents. */
const queryPrice = (field: string) =>
  yup
    .number()
    .transform((_value, original) => {
      if (original === undefined) return undefined;
      const match =
        typeof original === 'string' ? /^(\d{1,10})(?:\.(\d{1,2}))?$/.exec(original.trim()) : null;
      return match ? Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0')) : NaN;
    })
    .typeError(`${field} must be a decimal number >= 0 with at most 2 decimals`)
    .optional();

/** `limit` from the query, via the shared integer() (plain digits only; a repeated parameter is a 400). */
const queryLimit = (max: number, fallback: number) => {
  const message = `limit must be an integer between 1 and ${max}`;
  return integer().typeError(message).integer(message).min(1, message).max(max, message).default(fallback);
};

/** The filters shared by the offset and the cursor lists. */
const filterFields = {
  keyword: trimmedString('keyword', 200).optional(),
  categoryId: id().optional(),
  status: yup
    .string()
    .typeError('status must be a string')
    .oneOf(PRODUCT_STATUSES, `status must be one of ${PRODUCT_STATUSES.join(', ')}`)
    .optional(),
  sellerId: id().optional(),
  // Parsed straight into integer cents.
  minPrice: queryPrice('minPrice'),
  maxPrice: queryPrice('maxPrice'),
};

/** An inclusive price range must not be empty. */
function withPriceRange<T extends yup.AnyObject>(schema: yup.ObjectSchema<T>) {
  return schema.test('price-range', 'minPrice must not be greater than maxPrice', function check(value) {
    const v = value as { minPrice?: number; maxPrice?: number };
    if (v?.minPrice === undefined || v?.maxPrice === undefined || v.minPrice <= v.maxPrice) return true;
    return this.createError({ path: 'minPrice', message: 'minPrice must not be greater than maxPrice' });
  });
}

export const listProductsQuery = withPriceRange(
  strictObject({
    ...filterFields,
    ...pageQueryFields(),
    sort: yup
      .string()
      .typeError('sort must be a string')
      .matches(/^(createdAt|price|salesCount)(,(asc|desc))?$/i, {
        message: 'sort must be <createdAt|price|salesCount>,<asc|desc>',
        excludeEmptyString: false,
      })
      .default('createdAt,desc'),
  }),
);
export type ListProductsQuery = yup.InferType<typeof listProductsQuery>;

export const cursorProductsQuery = withPriceRange(
  strictObject({
    ...filterFields,
    limit: queryLimit(100, 20),
    cursor: yup.string().typeError('cursor must be a string').optional(),
  }),
);
export type CursorProductsQuery = yup.InferType<typeof cursorProductsQuery>;

export const popularProductsQuery = strictObject({ limit: queryLimit(50, 10) });

export const productImageSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'imageUrl', 'displayOrder'],
  properties: { id: { type: 'integer' }, imageUrl: { type: 'string' }, displayOrder: { type: 'integer' } },
};

export const productSchema: JsonSchema = {
  type: 'object',
  required: [
    'id',
    'sellerId',
    'categoryId',
    'name',
    'description',
    'price',
    'stockQuantity',
    'status',
    'salesCount',
    'images',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    id: { type: 'integer' },
    sellerId: { type: 'integer' },
    categoryId: { type: 'integer' },
    name: { type: 'string' },
    description: { type: ['string', 'null'] },
    price: { type: 'number', multipleOf: 0.01, description: 'at most 2 decimals' },
    stockQuantity: { type: 'integer', minimum: 0 },
    status: { type: 'string', enum: [...PRODUCT_STATUSES] },
    salesCount: { type: 'integer', minimum: 0 },
    images: { type: 'array', items: productImageSchema },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
};

export const productPageSchema: JsonSchema = pageEnvelopeSchema(productSchema);

export const cursorPageSchema: JsonSchema = {
  type: 'object',
  required: ['content', 'nextCursor', 'hasNext', 'size'],
  properties: {
    content: { type: 'array', items: productSchema },
    nextCursor: {
      type: ['string', 'null'],
      description: 'URL-safe Base64 of `<createdAt yyyy-MM-ddTHH:mm:ss.SSS UTC>:<id>`',
    },
    hasNext: { type: 'boolean' },
    size: { type: 'integer', minimum: 0 },
  },
};

export const productListSchema: JsonSchema = { type: 'array', items: productSchema };
