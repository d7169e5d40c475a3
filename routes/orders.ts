import { strictObject } from '../lib/http/validate';
import { defineRoute, errorResponses, type RouteDef } from '../lib/http/route';
import {
  createOrderBody,
  IDEMPOTENCY_KEY_PATTERN,
  orderIdParams,
  orderListQuery,
  orderPageShape,
  orderShape,
  placedOrdersShape,
  statusUpdateBody,
} from '../lib/orders/order-schemas';
import type { OrderStatus } from '../actors/order-lifecycle-machine';
import type { Services } from '../lib/services';

export function orderRoutes(services: Services): RouteDef[] {
  return [
    defineRoute({
      method: 'post',
      path: '/orders',
      summary:
        'Place an order: one order per seller, all-or-nothing, stock deducted safely under concurrency',
      tags: ['Orders'],
      auth: ['BUYER'],
      body: createOrderBody,
      headers: [
        {
          name: 'Idempotency-Key',
          description:
            'Optional, 1-255 visible ASCII characters, compared exactly (case-sensitive). The same buyer and key within 24 h get the first (successful) response again and nothing is created; the same key with a different body is 409 IDEMPOTENCY_KEY_REUSED. A failed attempt frees the key. Present but empty is 400.',
          // The same pattern the service checks, written with printable characters.
          schema: { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN.source.replace('\\x21-\\x7e', '!-~') },
          example: 'checkout-7f3a9c2e',
        },
      ],
      responses: {
        201: {
          description: 'The created orders (a replay of the first response for a repeated Idempotency-Key)',
          schema: placedOrdersShape,
          headers: {
            'Idempotent-Replayed': {
              description: '`true` when this is the stored first response of a repeated Idempotency-Key',
              required: false,
              schema: { type: 'string', enum: ['true'] },
            },
          },
        },
        ...errorResponses(
          [
            400,
            'VALIDATION_ERROR (quantity 1..1000, a productId twice, strings in shippingAddress, unknown fields, an order total over 9999999999.99, an empty or malformed Idempotency-Key)',
          ],
          401,
          403,
          [404, 'NOT_FOUND: an unknown or deleted product'],
          [
            409,
            'INSUFFICIENT_STOCK (naming the product), PRODUCT_NOT_ON_SALE (a DRAFT product), IDEMPOTENCY_KEY_REUSED',
          ],
          415,
          [
            503,
            'SERVICE_UNAVAILABLE: the product is contended right now, or the first request with this Idempotency-Key is still running; retry after Retry-After seconds',
          ],
        ),
      },
      handler: async ({ body, auth }, ctx) => {
        // A header that is present but empty is a bad key (400), not "no key".
        const key = ctx.headers['idempotency-key'] === undefined ? undefined : ctx.get('Idempotency-Key');
        const result = await services.orders.place(auth!.id, body, key);
        if (result.replayed) ctx.set('Idempotent-Replayed', 'true');
        ctx.status = result.status;
        ctx.body = result.body;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/orders',
      summary: "The caller's own orders (as buyer), newest first",
      tags: ['Orders'],
      auth: 'any',
      query: orderListQuery,
      responses: {
        200: { description: 'A page of orders', schema: orderPageShape },
        ...errorResponses(400, 401),
      },
      handler: async ({ query, auth }, ctx) => {
        ctx.body = await services.orders.listOwn(auth!.id, query);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/orders/:orderId',
      summary: 'One order: for its buyer, a seller with items in it, or an admin',
      tags: ['Orders'],
      auth: 'any',
      params: orderIdParams,
      responses: {
        200: { description: 'The order', schema: orderShape },
        ...errorResponses(400, 401, 403, 404),
      },
      handler: async ({ params, auth }, ctx) => {
        ctx.body = await services.orders.get(params.orderId, auth!);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/orders/:orderId/cancel',
      summary: 'Cancel an own order (PENDING or CONFIRMED); stock and salesCount are restored',
      tags: ['Orders'],
      auth: ['BUYER'],
      params: orderIdParams,
      // No body is needed; if one is sent it must be an empty JSON object (request schemas are strict).
      body: strictObject({}),
      responses: {
        200: { description: 'The cancelled order', schema: orderShape },
        ...errorResponses(400, 401, 403, 404, [409, 'ORDER_NOT_CANCELLABLE']),
      },
      handler: async ({ params, auth }, ctx) => {
        ctx.body = await services.orders.cancel(auth!.id, params.orderId);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/sellers/orders',
      summary: "Orders containing the caller's products, newest first",
      tags: ['Orders'],
      auth: ['SELLER'],
      query: orderListQuery,
      responses: {
        200: { description: 'A page of orders', schema: orderPageShape },
        ...errorResponses(400, 401, 403),
      },
      handler: async ({ query, auth }, ctx) => {
        ctx.body = await services.orders.listForSeller(auth!.id, query);
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/sellers/orders/:orderId/status',
      summary: 'Move an order one step forward (PENDING -> CONFIRMED -> SHIPPED -> DELIVERED)',
      tags: ['Orders'],
      auth: ['SELLER'],
      params: orderIdParams,
      body: statusUpdateBody,
      responses: {
        200: { description: 'The updated order', schema: orderShape },
        ...errorResponses(
          400,
          401,
          [403, 'FORBIDDEN: the order has none of your products'],
          404,
          [409, 'INVALID_STATUS_TRANSITION'],
          415,
        ),
      },
      handler: async ({ params, body, auth }, ctx) => {
        ctx.body = await services.orders.updateStatus(auth!.id, params.orderId, body.status as OrderStatus);
      },
    }),
  ];
}
