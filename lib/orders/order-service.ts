// Orders: placement (through the inventory of the configured mode, with Idempotency-Key), the seller's
// one-step-forward status update and the buyer's cancellation (decided by the lifecycle machine,
// persisted with compare-and-set), and the order reads with their authorization.
import type { Db, Trx } from '../db';
import { affectedRows, isDeadlock } from '../db';
import { ConflictError, ForbiddenError, NotFoundError } from '../errors';
import type { Role } from '../config';
import { fetchPage, mapPage, type PageRequest, type PageSlice } from '../query-helpers';
import type { Inventory } from '../inventory/inventory';
import { restoreStock, totalsByProduct } from '../inventory/stock-sql';
import { writeOutbox } from '../notifications/outbox';
import { currentRequestId } from '../request-context';
import {
  nextStatus,
  SELLER_EVENT_FOR_TARGET,
  type OrderLifecycleEvent,
  type OrderStatus,
} from '../../actors/order-lifecycle-machine';
import type { IdempotencyStore } from './idempotency';
import type { CreateOrderBody } from './order-schemas';
import { Order } from './order-model';
import { orderJson, type OrderJson } from './order-json';

export interface OrderServiceDeps {
  db: Db;
  inventory: Inventory;
  idempotency: IdempotencyStore;
  afterCommit: (productIds: number[]) => Promise<void>;
}

export interface PlaceResult {
  status: number;
  body: { orders: OrderJson[] };
  replayed: boolean;
}

/** Lost compare-and-set races re-read and decide again; this bounds the loop. */
const MAX_CAS_ATTEMPTS = 10;

export function createOrderService(deps: OrderServiceDeps) {
  const { db, inventory } = deps;

  async function loadOrders(ids: number[], trx?: Trx): Promise<OrderJson[]> {
    if (ids.length === 0) return [];
    const orders = await Order.query(trx ?? db)
      .whereIn('id', ids)
      .withGraphFetched('[items, history]')
      .orderBy('id', 'desc');
    return orders.map(orderJson);
  }

  async function findOrder(
    orderId: number,
  ): Promise<{ id: number; buyer_id: number; status: OrderStatus; order_number: string }> {
    const order = await db('orders').where('id', orderId).first('id', 'buyer_id', 'status', 'order_number');
    if (!order) throw new NotFoundError(`Order ${orderId} not found`);
    return order;
  }

  async function sellerHasItems(orderId: number, sellerId: number): Promise<boolean> {
    return Boolean(await db('order_items').where({ order_id: orderId, seller_id: sellerId }).first('id'));
  }

  /**
   * Moves an order from `from` to `to` if it is still `from` (compare-and-set), with its history and
   * outbox rows and `extra` work, in one transaction. False when another request changed it first.
   */
  async function compareAndSet(
    order: { id: number; buyer_id: number; order_number: string },
    from: OrderStatus,
    to: OrderStatus,
    changedBy: number,
    extra?: (trx: Trx, now: Date) => Promise<void>,
  ): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await casTransaction(order, from, to, changedBy, extra);
      } catch (err) {
        // InnoDB may pick this transaction as a deadlock victim; nothing was written, so try again.
        if (!isDeadlock(err) || attempt >= MAX_CAS_ATTEMPTS) throw err;
      }
    }
  }

  function casTransaction(
    order: { id: number; buyer_id: number; order_number: string },
    from: OrderStatus,
    to: OrderStatus,
    changedBy: number,
    extra?: (trx: Trx, now: Date) => Promise<void>,
  ): Promise<boolean> {
    return db.transaction(async (trx) => {
      const now = new Date();
      const updated = affectedRows(
        await trx('orders').where({ id: order.id, status: from }).update({ status: to, updated_at: now }),
      );
      if (updated !== 1) return false;
      await trx('order_status_history').insert({
        order_id: order.id,
        from_status: from,
        to_status: to,
        changed_by: changedBy,
        changed_at: now,
      });
      await writeOutbox(
        trx,
        [
          {
            type: 'OrderStatusChanged',
            recipientId: order.buyer_id,
            payload: {
              buyerId: order.buyer_id,
              orderId: order.id,
              orderNumber: order.order_number,
              from,
              to,
            },
          },
        ],
        now,
        currentRequestId(),
      );
      if (extra) await extra(trx, now);
      return true;
    });
  }

  return {
    /** POST /orders. Replays the stored response for a repeated Idempotency-Key. */
    async place(buyerId: number, body: CreateOrderBody, idempotencyKey?: string): Promise<PlaceResult> {
      let claimId: number | undefined;
      if (idempotencyKey !== undefined) {
        const claim = await deps.idempotency.claim(buyerId, idempotencyKey, body);
        if (claim.kind === 'replay')
          return { status: claim.status, body: claim.body as { orders: OrderJson[] }, replayed: true };
        claimId = claim.id;
      }
      try {
        const orders = await inventory.place({
          buyerId,
          address: body.shippingAddress,
          items: body.orderItems.map((item) => ({ productId: item.productId, quantity: item.quantity })),
          idempotencyKeyId: claimId,
          requestId: currentRequestId(),
        });
        return { status: 201, body: { orders }, replayed: false };
      } catch (err) {
        if (claimId !== undefined) await deps.idempotency.release(claimId).catch(() => undefined);
        throw err;
      }
    },

    /** GET /orders/:id — its buyer, a seller with items in it, or an admin. */
    async get(orderId: number, caller: { id: number; role: Role }): Promise<OrderJson> {
      const order = await findOrder(orderId);
      const allowed =
        caller.role === 'ADMIN' ||
        (caller.role === 'BUYER' && order.buyer_id === caller.id) ||
        (caller.role === 'SELLER' && (await sellerHasItems(orderId, caller.id)));
      if (!allowed) throw new ForbiddenError('You may only read your own orders');
      return (await loadOrders([orderId]))[0];
    },

    /** GET /orders — the caller's own orders (as buyer), newest first. */
    async listOwn(
      buyerId: number,
      request: PageRequest & { status?: string },
    ): Promise<PageSlice<OrderJson>> {
      const query = db('orders').where('buyer_id', buyerId).orderBy('id', 'desc').select('id');
      if (request.status) query.andWhere('status', request.status);
      const page = await fetchPage<{ id: number }>(query, request);
      return mapPage(page, (rows) => loadOrders(rows.map((row) => row.id)));
    },

    /** GET /sellers/orders — orders containing the seller's products, newest first. */
    async listForSeller(
      sellerId: number,
      request: PageRequest & { status?: string },
    ): Promise<PageSlice<OrderJson>> {
      const query = db('orders')
        .whereExists(
          db('order_items')
            .select(db.raw('1'))
            .whereRaw('order_items.order_id = orders.id')
            .andWhere('order_items.seller_id', sellerId),
        )
        .orderBy('orders.id', 'desc')
        .select('orders.id');
      if (request.status) query.andWhere('orders.status', request.status);
      const page = await fetchPage<{ id: number }>(query, request);
      return mapPage(page, (rows) => loadOrders(rows.map((row) => row.id)));
    },

    /** PATCH /sellers/orders/:id/status — exactly one step forward, by a seller with items in the order. */
    async updateStatus(sellerId: number, orderId: number, target: OrderStatus): Promise<OrderJson> {
      for (let attempt = 1; attempt <= MAX_CAS_ATTEMPTS; attempt++) {
        const order = await findOrder(orderId);
        if (!(await sellerHasItems(orderId, sellerId)))
          throw new ForbiddenError('This order has none of your products');
        const type = SELLER_EVENT_FOR_TARGET[target];
        const event = type ? ({ type, memberId: sellerId, role: 'SELLER' } as OrderLifecycleEvent) : null;
        if (!event || nextStatus(order.status, event) !== target) {
          throw new ConflictError(
            'INVALID_STATUS_TRANSITION',
            `An order cannot move from ${order.status} to ${target}`,
          );
        }
        if (await compareAndSet(order, order.status, target, sellerId)) {
          deps.afterCommit([]).catch(() => undefined);
          return (await loadOrders([orderId]))[0];
        }
      }
      throw new ConflictError('INVALID_STATUS_TRANSITION', 'The order changed concurrently; please retry');
    },

    /** POST /orders/:id/cancel — by its buyer, from PENDING or CONFIRMED; gives the stock back once. */
    async cancel(buyerId: number, orderId: number): Promise<OrderJson> {
      for (let attempt = 1; attempt <= MAX_CAS_ATTEMPTS; attempt++) {
        const order = await findOrder(orderId);
        if (order.buyer_id !== buyerId) throw new ForbiddenError('You may only cancel your own orders');
        if (nextStatus(order.status, { type: 'CANCEL', memberId: buyerId, role: 'BUYER' }) !== 'CANCELLED') {
          throw new ConflictError(
            'ORDER_NOT_CANCELLABLE',
            `An order in status ${order.status} cannot be cancelled`,
          );
        }
        const items = (await db('order_items')
          .where('order_id', orderId)
          .select('product_id', 'quantity')) as Array<{
          product_id: number;
          quantity: number;
        }>;
        const changes = totalsByProduct(
          items.map((item) => ({ productId: item.product_id, quantity: item.quantity })),
        );
        // The compare-and-set and the stock restore share one transaction: only the winner restores.
        const won = await compareAndSet(order, order.status, 'CANCELLED', buyerId, (trx, now) =>
          restoreStock(trx, changes, now),
        );
        if (won) {
          inventory.restored(changes);
          await deps.afterCommit(changes.map((change) => change.productId));
          return (await loadOrders([orderId]))[0];
        }
      }
      throw new ConflictError('ORDER_NOT_CANCELLABLE', 'The order changed concurrently; please retry');
    },
  };
}

export type OrderService = ReturnType<typeof createOrderService>;
