import { strictObject } from '../lib/http/validate';
import { defineRoute, errorResponses, lostCommit, unavailable, type RouteDef } from '../lib/http/route';
import { pageEnvelope } from '../lib/http/pagination';
import {
  createOrderBody,
  createOrderHeaders,
  orderIdParams,
  orderListQuery,
  orderPageShape,
  orderShape,
  placedOrdersShape,
  statusUpdateBody,
} from '../lib/orders/order-schemas';
import type { Services } from '../lib/services';

/** The Retry-After of a 409 IDEMPOTENCY_KEY_IN_PROGRESS (lib/errors.ts); POST /orders' other 409s carry none. */
const RETRY_AFTER_IN_PROGRESS = {
  'Retry-After': {
    description: 'With IDEMPOTENCY_KEY_IN_PROGRESS only: seconds to wait before retrying with the same key',
    required: false,
    schema: { type: 'integer', minimum: 1 },
  },
};

export function orderRoutes(services: Pick<Services, 'orders' | 'orderDiagram'>): RouteDef[] {
  return [
    defineRoute({
      method: 'post',
      path: '/orders',
      summary:
        'Place an order: one order per seller, all-or-nothing, stock deducted safely under concurrency',
      tags: ['Orders'],
      auth: ['BUYER'],
      body: createOrderBody,
      headers: createOrderHeaders,
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
          403,
          [404, 'NOT_FOUND: an unknown or deleted product'],
          [
            409,
            "INSUFFICIENT_STOCK (naming the product; also a SOLD_OUT product, whose stock is 0), PRODUCT_NOT_ON_SALE (a DRAFT product), IDEMPOTENCY_KEY_REUSED, IDEMPOTENCY_KEY_IN_PROGRESS (with Retry-After), ORDER_LIMIT_EXCEEDED (an operator cap, off by default, naming the limit: pending orders per buyer, or units of one product in the buyer's PENDING and CONFIRMED orders)",
            RETRY_AFTER_IN_PROGRESS,
          ],
          415,
          [
            503,
            "SERVICE_UNAVAILABLE (the database is unavailable or too slow, the product's stock is changing too fast, or with several instances the product's shard has no reachable owner right now) or COMMIT_OUTCOME_UNKNOWN (the COMMIT's outcome could not be checked, or the owning instance did not answer in time: the order may exist); retry after Retry-After seconds with the same Idempotency-Key",
          ],
        ),
      },
      handler: async ({ body, headers, auth }, ctx) => {
        const { orders, replayed } = await services.orders.place(auth.id, body, headers['Idempotency-Key']);
        if (replayed) ctx.set('Idempotent-Replayed', 'true');
        ctx.status = 201;
        ctx.body = { orders };
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
        ...errorResponses(400),
      },
      handler: async ({ query, auth }, ctx) => {
        ctx.body = pageEnvelope(await services.orders.listOwn(auth.id, query), query);
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
        ...errorResponses(400, 403, 404),
      },
      handler: async ({ params, auth }, ctx) => {
        ctx.body = await services.orders.get(params.orderId, auth);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/orders/:orderId/lifecycle',
      summary: "The order's lifecycle diagram (SVG) with its current status and the path it took highlighted",
      tags: ['Orders'],
      auth: 'any',
      params: orderIdParams,
      responses: {
        200: {
          description: 'The diagram; the current status has class "current", the transitions taken "taken"',
          contentType: 'image/svg+xml',
          schema: { type: 'string' },
        },
        ...errorResponses(
          400,
          [403, 'Not the buyer, a seller with items in it, or an admin (FORBIDDEN)'],
          [404, 'Unknown order (NOT_FOUND)'],
        ),
      },
      handler: async ({ params, auth }, ctx) => {
        // The orders service decides who may read the order (same rule as GET /orders/:orderId).
        const order = await services.orders.get(params.orderId, auth);
        ctx.type = 'image/svg+xml; charset=utf-8';
        ctx.set('Cache-Control', 'private, no-cache');
        ctx.body = await services.orderDiagram.orderDiagram(order);
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
        ...errorResponses(
          400,
          403,
          404,
          [409, 'ORDER_NOT_CANCELLABLE'],
          unavailable(lostCommit('the order')),
        ),
      },
      handler: async ({ params, auth }, ctx) => {
        ctx.body = await services.orders.cancel(auth.id, params.orderId);
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
        ...errorResponses(400, 403),
      },
      handler: async ({ query, auth }, ctx) => {
        ctx.body = pageEnvelope(await services.orders.listForSeller(auth.id, query), query);
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
          [403, 'FORBIDDEN: the order has none of your products'],
          404,
          [409, 'INVALID_STATUS_TRANSITION'],
          415,
          unavailable(lostCommit('the order')),
        ),
      },
      handler: async ({ params, body, auth }, ctx) => {
        ctx.body = await services.orders.updateStatus(auth.id, params.orderId, body.status);
      },
    }),
  ];
}
