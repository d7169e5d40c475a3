// Request schemas (yup, strict: unknown fields and wrong types are 400) and response JSON Schemas of the
// order endpoints.
import * as yup from 'yup';
import { ORDER_STATUSES } from '../../actors/order-lifecycle-machine';
import { id, strictObject } from '../http/validate';
import { pageEnvelopeSchema, pageQueryFields } from '../http/pagination';
import type { JsonSchema } from '../http/route';

export const MAX_ORDER_LINES = 100;
export const MAX_LINE_QUANTITY = 1000;

/** A JSON string (numbers are not silently turned into strings), non-blank unless `allowEmpty`. */
const text = (max: number, allowEmpty = false) =>
  yup
    .string()
    .strict()
    .typeError('${path} must be a string')
    .defined('${path} is required')
    .max(max, `\${path} must be at most ${max} characters`)
    .test('not-blank', '${path} must not be blank', (value) => allowEmpty || (value ?? '').trim().length > 0);

export const shippingAddressSchema = strictObject({
  zipCode: text(20),
  address: text(255),
  addressDetail: text(255, true),
  receiverName: text(100),
  receiverPhone: text(30),
});

const orderLine = strictObject({
  productId: yup
    .number()
    .strict()
    .typeError('${path} must be a positive integer')
    .required('${path} is required')
    .integer('${path} must be a positive integer')
    .min(1, '${path} must be a positive integer')
    .max(2_147_483_647, '${path} is too large'),
  quantity: yup
    .number()
    .strict()
    .typeError('${path} must be an integer')
    .required('${path} is required')
    .integer('${path} must be an integer')
    .min(1, '${path} must be at least 1')
    .max(MAX_LINE_QUANTITY, `\${path} must be at most ${MAX_LINE_QUANTITY}`),
});

export const createOrderBody = strictObject({
  orderItems: yup
    .array()
    .of(orderLine.required())
    .required('orderItems is required')
    .min(1, 'orderItems must have at least 1 entry')
    .max(MAX_ORDER_LINES, `orderItems must have at most ${MAX_ORDER_LINES} entries`)
    .test('distinct-products', 'orderItems must name each productId once', (lines) => {
      const ids = (lines ?? []).map((line) => line?.productId);
      return new Set(ids).size === ids.length;
    }),
  shippingAddress: shippingAddressSchema.default(undefined).required('shippingAddress is required'),
});
export type CreateOrderBody = yup.InferType<typeof createOrderBody>;

export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** POST /orders: a header that is present but empty is a bad key (400), not "no key". */
export const createOrderHeaders = strictObject({
  'Idempotency-Key': yup
    .string()
    .matches(IDEMPOTENCY_KEY_PATTERN, 'Idempotency-Key must be 1-255 visible ASCII characters')
    .meta({
      description:
        'Optional, 1-255 visible ASCII characters, compared exactly (case-sensitive). The same buyer and key within 24 h get the first (successful) response again and nothing is created; the same key with a different body is 409 IDEMPOTENCY_KEY_REUSED. A failed attempt frees the key.',
    }),
});

export const orderIdParams = strictObject({ orderId: id().required() });

export const statusUpdateBody = strictObject({
  status: yup
    .string()
    .strict()
    .typeError('status must be a string')
    .required('status is required')
    .oneOf([...ORDER_STATUSES], `status must be one of ${ORDER_STATUSES.join(', ')}`),
});

export const orderListQuery = strictObject({
  status: yup.string().oneOf([...ORDER_STATUSES], `status must be one of ${ORDER_STATUSES.join(', ')}`),
  ...pageQueryFields(),
});
export type OrderListQuery = yup.InferType<typeof orderListQuery>;

const money: JsonSchema = { type: 'number', multipleOf: 0.01, minimum: 0 };
const statusEnum: JsonSchema = { type: 'string', enum: [...ORDER_STATUSES] };

export const orderSchema: JsonSchema = {
  type: 'object',
  required: [
    'id',
    'orderNumber',
    'buyerId',
    'status',
    'totalAmount',
    'shippingAddress',
    'items',
    'statusHistory',
    'orderedAt',
    'updatedAt',
  ],
  properties: {
    id: { type: 'integer' },
    orderNumber: {
      type: 'string',
      description: 'UTC date + 12 random base32 characters, e.g. 20261122-7K3QX9M2PA4D',
    },
    buyerId: { type: 'integer' },
    status: statusEnum,
    totalAmount: money,
    shippingAddress: {
      type: 'object',
      required: ['zipCode', 'address', 'addressDetail', 'receiverName', 'receiverPhone'],
      properties: {
        zipCode: { type: 'string' },
        address: { type: 'string' },
        addressDetail: { type: 'string' },
        receiverName: { type: 'string' },
        receiverPhone: { type: 'string' },
      },
    },
    items: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'productId', 'sellerId', 'productName', 'productPrice', 'quantity', 'subtotal'],
        properties: {
          id: { type: 'integer' },
          productId: { type: 'integer' },
          sellerId: { type: 'integer' },
          productName: { type: 'string', description: 'Snapshot at order time' },
          productPrice: { ...money, description: 'Snapshot at order time' },
          quantity: { type: 'integer', minimum: 1, maximum: MAX_LINE_QUANTITY },
          subtotal: money,
        },
      },
    },
    statusHistory: {
      type: 'array',
      description: 'Every transition, oldest first (the first is null -> PENDING)',
      items: {
        type: 'object',
        required: ['from', 'to', 'changedBy', 'changedAt'],
        properties: {
          from: { type: ['string', 'null'], enum: [...ORDER_STATUSES, null] },
          to: statusEnum,
          changedBy: { type: ['integer', 'null'], description: 'Member who made the change' },
          changedAt: { type: 'string', format: 'date-time' },
        },
      },
    },
    orderedAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
};

export const createOrderResponseSchema: JsonSchema = {
  type: 'object',
  required: ['orders'],
  properties: { orders: { type: 'array', items: orderSchema, description: 'One order per seller' } },
};

export const orderPageSchema = pageEnvelopeSchema(orderSchema);
