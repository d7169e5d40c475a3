// Request schemas (yup, strict: unknown fields are a 400) and the response shapes of the product endpoints
// (the TypeScript types and the OpenAPI components both come from them).
import * as yup from 'yup';
import { id, integer, maxChars, strictObject } from '../http/validate';
import { pageQueryFields } from '../http/pagination';
import {
  enumField,
  idField,
  intField,
  moneyField,
  pageShape,
  stringField,
  timeField,
} from '../http/response-fields';
import { imageShape } from '../images/image-schemas';
import { PRODUCT_STATUSES } from './product-model';
import { MAX_STOCK } from '../../actors/stock-rules';

/** The longest product name, in characters (the column is VARCHAR(200)). */
export const PRODUCT_NAME_MAX_CHARS = 200;

export const MAX_PRICE_CENTS = 999_999_999_999; // DECIMAL(12,2)
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
    .test(maxChars(max, `${field} must be at most ${max} characters`));

/**
 * A JSON number with at most 2 decimals, > 0. `Math.round(v * 100) / 100 === v` is exact below 2^53/100:
 * a value with 2 decimals is the double nearest to cents/100, which the division reproduces exactly, and
 * any other double differs from it (an absolute tolerance rejected large valid prices such as 1234567890.12).
 */
const PRICE_DESCRIPTION = `A JSON number from 0.01 to ${MAX_PRICE_CENTS / 100} with at most 2 decimals`;

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
    )
    // Not `multipleOf: 0.01`: in binary floats 19.99 is no multiple of 0.01, and stock validators say so.
    .meta({ description: PRICE_DESCRIPTION, jsonSchema: { minimum: 0.01, maximum: MAX_PRICE_CENTS / 100 } });

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
    .oneOf(['DRAFT', 'ON_SALE'] as const, 'status must be DRAFT or ON_SALE')
    .meta({ description: 'DRAFT (only you see it) or ON_SALE; SOLD_OUT follows the stock' });

export const createProductBody = strictObject({
  categoryId: id().required('categoryId is required'),
  name: trimmedString('name', PRODUCT_NAME_MAX_CHARS)
    .required('name is required')
    .min(1, 'name must not be blank'),
  description: trimmedString('description', 5000).nullable().optional(),
  price: price().required('price is required'),
  stockQuantity: stockQuantity().required('stockQuantity is required'),
  status: listingStatus().default('ON_SALE'),
}).meta({
  example: {
    categoryId: 2,
    name: 'Handmade phone case',
    description: 'Leather, fits Demo Phone X',
    price: 19.99,
    stockQuantity: 10,
    status: 'ON_SALE',
  },
});
export type CreateProductInput = yup.InferType<typeof createProductBody>;

export const updateProductBody = strictObject({
  categoryId: id().optional(),
  name: trimmedString('name', PRODUCT_NAME_MAX_CHARS).min(1, 'name must not be blank').optional(),
  description: trimmedString('description', 5000).nullable().optional(),
  price: price().optional(),
  stockQuantity: stockQuantity().optional(),
  status: listingStatus().optional(),
})
  .test('not-empty', 'at least one field must be given', (value) =>
    Object.values(value ?? {}).some((v) => v !== undefined),
  )
  .meta({
    description: 'At least one field',
    example: { price: 17.5, stockQuantity: 25 },
    jsonSchema: { minProperties: 1 },
  });
export type UpdateProductInput = yup.InferType<typeof updateProductBody>;

export const productIdParams = strictObject({
  productId: id().required().meta({ description: 'The product id', example: 1 }),
});

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
    .optional()
    .meta({
      description: `Inclusive; a decimal >= 0 with at most 2 decimals${field === 'minPrice' ? ', not greater than maxPrice' : ''}`,
      jsonSchema: { minimum: 0, maximum: 9999999999.99 },
    });

/** `limit` from the query, via the shared integer() (plain digits only; a repeated parameter is a 400). */
const queryLimit = (max: number, fallback: number) => {
  const message = `limit must be an integer between 1 and ${max}`;
  return integer()
    .typeError(message)
    .integer(message)
    .min(1, message)
    .max(max, message)
    .default(fallback)
    .meta({ description: `How many products, 1-${max}` });
};

/** The filters shared by the offset and the cursor lists. */
const filterFields = {
  keyword: trimmedString('keyword', 200).optional().meta({
    description:
      'Part of the name, case-insensitive (Unicode case; accents and emoji are not folded; either Unicode spelling of an accented letter matches, as names and the keyword are compared in NFC); % and _ match themselves',
    example: 'phone',
  }),
  categoryId: id().optional().meta({ description: 'Only this category (not its children)' }),
  status: yup
    .string()
    .typeError('status must be a string')
    .oneOf(PRODUCT_STATUSES, `status must be one of ${PRODUCT_STATUSES.join(', ')}`)
    .optional()
    .meta({
      description:
        'Only this status. Without it: ON_SALE and SOLD_OUT, plus the caller’s own DRAFTs; DRAFT lists only the caller’s own',
    }),
  sellerId: id().optional().meta({ description: 'Only this seller’s products' }),
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
      .default('createdAt,desc')
      .meta({ description: '`<createdAt|price|salesCount>[,<asc|desc>]`, case-insensitive; ties by id' }),
  }),
);
export type ListProductsQuery = yup.InferType<typeof listProductsQuery>;

export const cursorProductsQuery = withPriceRange(
  strictObject({
    ...filterFields,
    limit: queryLimit(100, 20),
    cursor: yup
      .string()
      .typeError('cursor must be a string')
      .optional()
      .meta({
        description:
          'nextCursor of the previous page; omit for the first page. Standard Base64 of the same text is ' +
          'accepted too (padded or not); surrounding spaces are ignored; anything else, a space inside included, is 400 INVALID_CURSOR.',
      }),
  }),
);
export type CursorProductsQuery = yup.InferType<typeof cursorProductsQuery>;

export const popularProductsQuery = strictObject({ limit: queryLimit(50, 10) });

const PRODUCT_EXAMPLE = {
  id: 1,
  sellerId: 2,
  categoryId: 2,
  name: 'Demo Phone X',
  description: 'Demo Phone X, a demo product.',
  price: 699,
  stockQuantity: 50,
  status: 'ON_SALE',
  salesCount: 0,
  images: [],
  createdAt: '2026-11-22T10:41:14.123Z',
  updatedAt: '2026-11-22T10:41:14.123Z',
};

export const productShape = yup
  .object({
    id: idField(),
    sellerId: idField(),
    categoryId: idField(),
    name: stringField(),
    description: stringField().nullable(),
    // The API writes 0.01 or more; rows written around it (imports, tests) may hold 0, which reads fine.
    price: moneyField('A JSON number with at most 2 decimals (0.01 or more when set through the API)').max(
      MAX_PRICE_CENTS / 100,
    ),
    stockQuantity: intField().min(0).max(MAX_STOCK),
    status: enumField(PRODUCT_STATUSES),
    salesCount: intField().min(0),
    images: yup.array(imageShape).defined().meta({ description: 'By displayOrder then id' }),
    createdAt: timeField(),
    updatedAt: timeField(),
  })
  .noUnknown()
  .meta({ component: 'Product', example: PRODUCT_EXAMPLE });
export type ProductJson = yup.InferType<typeof productShape>;

export const productPageShape = pageShape(productShape, 'ProductPage');

export const cursorPageShape = yup
  .object({
    content: yup.array(productShape).defined(),
    nextCursor: stringField()
      .nullable()
      .meta({
        description:
          'Send it back as `cursor` for the next page; null on the last page. Opaque: letters and digits only ' +
          '(URL-safe Base64), so it needs no escaping in a query string.',
      }),
    hasNext: yup.boolean().defined(),
    size: intField().min(0).meta({ description: 'Items on this page' }),
  })
  .noUnknown()
  .meta({ component: 'CursorPage' });
export type CursorPage = yup.InferType<typeof cursorPageShape>;

export const productListShape = yup.array(productShape).defined();
