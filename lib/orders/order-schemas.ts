// Request schemas (yup, strict: unknown fields and wrong types are 400) and the response shapes of the order
// endpoints (the TypeScript types and the OpenAPI components both come from them).
import * as yup from 'yup';
import { ORDER_STATUSES, SELLER_EVENT_FOR_TARGET } from '../../actors/order-lifecycle-machine';
import { id, maxChars, strictObject } from '../http/validate';
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

export const MAX_ORDER_LINES = 100;
export const MAX_LINE_QUANTITY = 1000;

/** A JSON string (numbers are not silently turned into strings), non-blank unless `allowEmpty`. */
const text = (max: number, allowEmpty = false) =>
  yup
    .string()
    .strict()
    .typeError('${path} must be a string')
    .defined('${path} is required')
    .test(maxChars(max, `\${path} must be at most ${max} characters`))
    .test('not-blank', '${path} must not be blank', (value) => allowEmpty || (value ?? '').trim().length > 0)
    // `\S`: JavaScript's whitespace is exactly what trim() removes.
    .meta(
      allowEmpty
        ? { description: 'May be empty' }
        : { description: 'Must not be blank', jsonSchema: { pattern: '\\S' } },
    );

/** The address of the OpenAPI document's examples (the request's and the order's). */
const EXAMPLE_ADDRESS = {
  zipCode: '04524',
  address: '1 Sejong-daero, Jung-gu, Seoul',
  addressDetail: 'Apt 101',
  receiverName: 'Demo Buyer',
  receiverPhone: '010-0000-0000',
};

/** The longest value of each address field, in characters. */
export const ADDRESS_MAX_CHARS = {
  zipCode: 20,
  address: 255,
  addressDetail: 255,
  receiverName: 100,
  receiverPhone: 30,
};

/** The longest a whole shipping address can be, in characters. */
export const SHIPPING_ADDRESS_MAX_CHARS = Object.values(ADDRESS_MAX_CHARS).reduce((sum, max) => sum + max, 0);

export const shippingAddressSchema = strictObject({
  zipCode: text(ADDRESS_MAX_CHARS.zipCode),
  address: text(ADDRESS_MAX_CHARS.address),
  addressDetail: text(ADDRESS_MAX_CHARS.addressDetail, true),
  receiverName: text(ADDRESS_MAX_CHARS.receiverName),
  receiverPhone: text(ADDRESS_MAX_CHARS.receiverPhone),
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
    .typeError('orderItems must be an array')
    .required('orderItems is required')
    .min(1, 'orderItems must have at least 1 entry')
    .max(MAX_ORDER_LINES, `orderItems must have at most ${MAX_ORDER_LINES} entries`)
    .test('distinct-products', 'orderItems must name each productId once', (lines) => {
      const ids = (lines ?? []).map((line) => line?.productId);
      return new Set(ids).size === ids.length;
    }),
  shippingAddress: shippingAddressSchema.default(undefined).required('shippingAddress is required'),
})
  // Every field takes its JSON type as sent (no transforms, no defaults): yup's cast of the whole body before the
  // tests would only copy it, so it is skipped (bench/README.md, orders, 2026-11-25).
  .strict()
  .meta({
    description:
      'Each productId at most once. The order total (per seller) must not exceed 9999999999.99. Products of several sellers make one order per seller, all or nothing.',
    example: {
      orderItems: [{ productId: 1, quantity: 1 }],
      shippingAddress: EXAMPLE_ADDRESS,
    },
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
      example: 'b9f3c2e0-5d1a-4c8e-9f7a-2e4d6c8b0a13',
    }),
});

const SELLER_TARGETS = Object.keys(SELLER_EVENT_FOR_TARGET);
/** Statuses a seller can never move an order to (PENDING, CANCELLED): 409, like a target out of turn. */
const NEVER_TARGETS = ORDER_STATUSES.filter((status) => !SELLER_TARGETS.includes(status));

export const orderIdParams = strictObject({
  orderId: id().required().meta({ description: 'The order id (not its orderNumber)', example: 1 }),
});

export const statusUpdateBody = strictObject({
  status: yup
    .string()
    .strict()
    .typeError('status must be a string')
    .required('status is required')
    .oneOf([...ORDER_STATUSES], `status must be one of ${ORDER_STATUSES.join(', ')}`)
    .meta({
      description: `The next status, exactly one step forward: ${SELLER_TARGETS.join(', ')}. One that is not the order's next status, or ${NEVER_TARGETS.join(' or ')}, is 409 INVALID_STATUS_TRANSITION; any other value (not an order status, e.g. lower-case) is 400 VALIDATION_ERROR.`,
      // Only the seller's targets can ever succeed, so only they are offered.
      jsonSchema: { enum: SELLER_TARGETS },
    }),
}).meta({ example: { status: 'CONFIRMED' } });

export const orderListQuery = strictObject({
  status: yup
    .string()
    .oneOf([...ORDER_STATUSES], `status must be one of ${ORDER_STATUSES.join(', ')}`)
    .meta({ description: 'Only orders in this status' }),
  ...pageQueryFields(),
});
export type OrderListQuery = yup.InferType<typeof orderListQuery>;

const ORDER_NUMBER_DESCRIPTION = 'UTC date + 12 random base32 characters, e.g. 20261122-7K3QX9M2PA4D';

export const orderItemShape = yup
  .object({
    id: idField(),
    productId: idField(),
    sellerId: idField(),
    productName: stringField().meta({ description: 'Snapshot at order time' }),
    productPrice: moneyField('Unit price, snapshot at order time (at most 2 decimals)'),
    quantity: intField().min(1).max(MAX_LINE_QUANTITY),
    subtotal: moneyField('productPrice × quantity (at most 2 decimals)'),
  })
  .noUnknown()
  .meta({ component: 'OrderItem' });

export const statusChangeShape = yup
  .object({
    from: enumField(ORDER_STATUSES)
      .nullable()
      .meta({ description: 'null for the first entry (the order was placed)' }),
    to: enumField(ORDER_STATUSES),
    changedBy: idField().nullable().meta({
      description: 'The member who made the change; null for the system (an expired PENDING order)',
    }),
    changedAt: timeField(),
  })
  .noUnknown()
  .meta({ component: 'StatusChange' });

const shippingAddressShape = yup
  .object({
    zipCode: stringField(),
    address: stringField(),
    addressDetail: stringField(),
    receiverName: stringField(),
    receiverPhone: stringField(),
  })
  .noUnknown()
  // Always sent: `.defined()` puts it in its parent's `required` (a yup object is optional by default).
  .defined()
  .meta({ component: 'ShippingAddress' });
export type ShippingAddress = yup.InferType<typeof shippingAddressShape>;

const ORDER_EXAMPLE = {
  id: 1,
  orderNumber: '20261122-7K3QX9M2PA4D',
  buyerId: 3,
  status: 'PENDING',
  totalAmount: 1398,
  shippingAddress: EXAMPLE_ADDRESS,
  items: [
    {
      id: 1,
      productId: 1,
      sellerId: 2,
      productName: 'Demo Phone X',
      productPrice: 699,
      quantity: 2,
      subtotal: 1398,
    },
  ],
  statusHistory: [{ from: null, to: 'PENDING', changedBy: 3, changedAt: '2026-11-22T10:41:14.123Z' }],
  orderedAt: '2026-11-22T10:41:14.123Z',
  updatedAt: '2026-11-22T10:41:14.123Z',
};

export const orderShape = yup
  .object({
    id: idField(),
    orderNumber: stringField().meta({ description: ORDER_NUMBER_DESCRIPTION }),
    buyerId: idField(),
    status: enumField(ORDER_STATUSES),
    totalAmount: moneyField('Sum of the subtotals (at most 2 decimals)'),
    shippingAddress: shippingAddressShape,
    items: yup.array(orderItemShape).defined(),
    statusHistory: yup
      .array(statusChangeShape)
      .defined()
      .meta({ description: 'Every transition, oldest first (the first is null -> PENDING)' }),
    orderedAt: timeField(),
    updatedAt: timeField(),
  })
  .noUnknown()
  .meta({ component: 'Order', example: ORDER_EXAMPLE });
export type OrderJson = yup.InferType<typeof orderShape>;
export type OrderItemJson = yup.InferType<typeof orderItemShape>;

export const placedOrdersShape = yup
  .object({
    orders: yup.array(orderShape).defined().meta({ description: 'One order per seller of the cart' }),
  })
  .noUnknown()
  .meta({ component: 'PlacedOrders', example: { orders: [ORDER_EXAMPLE] } });

export const orderPageShape = pageShape(orderShape, 'OrderPage');
