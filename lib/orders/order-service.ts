// Orders: placement (through the inventory of the configured mode, with Idempotency-Key), the seller's
// one-step-forward status update and the buyer's cancellation (decided by the lifecycle machine,
// persisted with compare-and-set), and the order reads with their authorization. The SQL is in
// order-repository.ts; stock is taken and given back only through the inventory.
import { isRowContention, type Db } from '../db';
import type { Logger } from '../logger';
import { AppError, ConflictError, ForbiddenError, NotFoundError } from '../errors';
import type { Role } from '../config';
import { mapPage, type PageRequest, type PageSlice } from '../query-helpers';
import type { Inventory, StockWriter } from '../inventory/inventory';
import { currentRequestId } from '../request-context';
import { totalsByProduct } from '../../actors/stock-rules';
import {
  nextStatus,
  notifiedOn,
  SELLER_EVENT_FOR_TARGET,
  type OrderStatus,
} from '../../actors/order-lifecycle-machine';
import { CommitOutcomeUnknownError, ServiceUnavailableError } from '../errors';
import { isDatabaseUnavailable } from '../db-errors';
import type { HeldClaim, IdempotencyStore } from './idempotency';
import type { CreateOrderBody } from './order-schemas';
import type { OrderJson } from './order-json';
import { createOrderRepository, type OrderHead } from './order-repository';
import type { OrderDetails } from './order-writer';
import { NO_CAPS, refuseEarly, type BuyerCaps } from './buyer-caps';

export interface OrderServiceDeps {
  db: Db;
  logger: Logger;
  inventory: Inventory;
  idempotency: IdempotencyStore;
  /** The operator's caps on a buyer's pending orders and open units per product (null = off). */
  caps?: BuyerCaps;
  /** The writer of the orders' rows, made with the same caps (createOrderWriter). */
  writer: StockWriter<OrderDetails, OrderJson[]>;
  /**
   * Named hook: new outbox rows were committed by a status change, a cancellation or an expiry (the dispatcher
   * delivers them). A placement's rows are announced by the inventory, where they were committed.
   */
  notifications: { wake(): void };
  /** Named hooks for metrics: orders committed, and placements refused by the error code the client sees. */
  observer?: { placed(count: number): void; refused(reason: string): void };
}

/** The orders of one placement, and whether they are the stored ones of an earlier request with the same key. */
export interface PlaceResult {
  orders: OrderJson[];
  replayed: boolean;
}

/** What one expiry sweep did (OrderService.expirePending). */
export interface ExpiryOutcome {
  /** The orders it cancelled. */
  expired: number[];
  /**
   * The orders it failed on: left PENDING for the next sweep, or, for an id also in `expired`, cancelled but
   * their restored stock not announced.
   */
  failed: Array<{ orderId: number; err: unknown }>;
}

/** The system's event that cancels an unconfirmed order (ORDER_PENDING_EXPIRY_SECONDS). */
const EXPIRE = { type: 'EXPIRE', role: 'SYSTEM' } as const;

/** Lost compare-and-set races re-read and decide again; this bounds the loop. */
const MAX_CAS_ATTEMPTS = 10;

export function createOrderService(deps: OrderServiceDeps) {
  const { inventory, notifications } = deps;
  const orders = createOrderRepository(deps.db, deps.logger);
  const caps = deps.caps ?? NO_CAPS;
  const orderWriter = deps.writer;

  async function findOrder(orderId: number): Promise<OrderHead> {
    const order = await orders.findOrder(orderId);
    if (!order) throw new NotFoundError(`Order ${orderId} not found`);
    return order;
  }

  async function loadOne(orderId: number): Promise<OrderJson> {
    return (await orders.loadOrders([orderId]))[0];
  }

  return {
    /** POST /orders. Replays the stored orders for a repeated Idempotency-Key. */
    async place(buyerId: number, body: CreateOrderBody, idempotencyKey?: string): Promise<PlaceResult> {
      let claim: HeldClaim | undefined;
      if (idempotencyKey !== undefined) {
        const claimed = await deps.idempotency.claim(buyerId, idempotencyKey, body);
        if (claimed.kind === 'replay')
          return { orders: (claimed.body as { orders: OrderJson[] }).orders, replayed: true };
        claim = claimed;
      }
      const items = body.orderItems.map((item) => ({ productId: item.productId, quantity: item.quantity }));
      try {
        await refuseEarly(deps.db, caps, buyerId, items);
        const placed = await inventory.place(
          {
            items,
            details: {
              buyerId,
              address: body.shippingAddress,
              idempotencyKeyId: claim?.id,
              idempotencyOwner: claim?.owner,
              requestId: currentRequestId(),
            },
          },
          orderWriter,
        );
        claim?.end();
        deps.observer?.placed(placed.length);
        return { orders: placed, replayed: false };
      } catch (err) {
        // A refusal is the client's answer (4xx); an outage (503) or a bug is not one.
        if (err instanceof AppError && err.status < 500) deps.observer?.refused(err.code);
        if (claim) {
          // After a lost COMMIT the orders may exist: keep the claim (its lease runs out) so the retry
          // with the same key finds the stored response or takes the claim over, never orders twice.
          if (err instanceof CommitOutcomeUnknownError) claim.end();
          else await deps.idempotency.release(claim).catch(() => undefined);
        }
        throw err;
      }
    },

    /** GET /orders/:id — its buyer, a seller with items in it, or an admin. */
    async get(orderId: number, caller: { id: number; role: Role }): Promise<OrderJson> {
      const order = await findOrder(orderId);
      const allowed =
        caller.role === 'ADMIN' ||
        (caller.role === 'BUYER' && order.buyer_id === caller.id) ||
        (caller.role === 'SELLER' && (await orders.sellerHasItems(orderId, caller.id)));
      if (!allowed) throw new ForbiddenError('You may only read your own orders');
      return loadOne(orderId);
    },

    /** GET /orders — the caller's own orders (as buyer), newest first. */
    async listOwn(
      buyerId: number,
      request: PageRequest & { status?: string },
    ): Promise<PageSlice<OrderJson>> {
      const page = await orders.pageOfBuyer(buyerId, request);
      return mapPage(page, (rows) => orders.loadOrders(rows.map((row) => row.id)));
    },

    /** GET /sellers/orders — orders containing the seller's products, newest first. */
    async listForSeller(
      sellerId: number,
      request: PageRequest & { status?: string },
    ): Promise<PageSlice<OrderJson>> {
      const page = await orders.pageOfSeller(sellerId, request);
      return mapPage(page, (rows) => orders.loadOrders(rows.map((row) => row.id)));
    },

    /** PATCH /sellers/orders/:id/status — exactly one step forward, by a seller with items in the order. */
    async updateStatus(sellerId: number, orderId: number, target: OrderStatus): Promise<OrderJson> {
      for (let attempt = 1; attempt <= MAX_CAS_ATTEMPTS; attempt++) {
        const order = await findOrder(orderId);
        if (!(await orders.sellerHasItems(orderId, sellerId)))
          throw new ForbiddenError('This order has none of your products');
        const type = SELLER_EVENT_FOR_TARGET[target];
        if (!type || nextStatus(order.status, { type, memberId: sellerId, role: 'SELLER' }) !== target) {
          throw new ConflictError(
            'INVALID_STATUS_TRANSITION',
            `An order cannot move from ${order.status} to ${target}`,
          );
        }
        const change = { changedBy: sellerId, notifies: notifiedOn(order.status, type) };
        const changed = await orders.transition(order, order.status, target, change);
        if (changed) {
          notifications.wake();
          return changed;
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
        const changes = totalsByProduct(await orders.orderLines(orderId));
        // The compare-and-set and the stock restore share one transaction: only the winner restores.
        // The buyer's own cancellation notifies no one (the transition's meta): the spec emits no event for it.
        const notifies = notifiedOn(order.status, 'CANCEL');
        const cancelled = await orders.transition(order, order.status, 'CANCELLED', {
          changedBy: buyerId,
          notifies,
          extra: (trx, now) => inventory.restore(trx, changes, now),
        });
        if (cancelled) {
          if (notifies.length > 0) notifications.wake();
          await inventory.restored(changes);
          return cancelled;
        }
      }
      throw new ConflictError('ORDER_NOT_CANCELLABLE', 'The order changed concurrently; please retry');
    },

    /**
     * The expiry sweep's work: cancels (EXPIRE, by the system) up to `limit` PENDING orders placed at least
     * `maxAgeSeconds` before `now`, oldest first, each like a buyer's cancel: one compare-and-set from PENDING
     * whose transaction also restores the stock and writes the outbox rows for the buyer and every seller.
     * Only the winner of that compare-and-set restores, so a buyer's cancel or a seller's confirm racing the
     * sweep, or another instance sweeping the same database, leaves exactly one outcome.
     * Each order on its own: one that fails is reported and the others still expire (and are announced). An
     * unavailable database ends the sweep at that order: every order after it would wait out the same timeouts
     * (one order's rows held by another transaction do not).
     * Once `signal` is aborted (the service stops) no further order is started. The next sweep takes the rest.
     */
    async expirePending(
      now: Date,
      maxAgeSeconds: number,
      limit: number,
      signal?: AbortSignal,
    ): Promise<ExpiryOutcome> {
      const due = await orders.pendingPlacedBefore(new Date(now.getTime() - maxAgeSeconds * 1000), limit);
      const outcome: ExpiryOutcome = { expired: [], failed: [] };
      for (const order of due) {
        if (signal?.aborted) break;
        if (nextStatus(order.status, EXPIRE) !== 'CANCELLED') continue;
        try {
          const changes = totalsByProduct(await orders.orderLines(order.id));
          const won = await orders.compareAndSet(order, order.status, 'CANCELLED', {
            changedBy: null,
            notifies: notifiedOn(order.status, EXPIRE.type),
            extra: (trx, at) => inventory.restore(trx, changes, at),
          });
          if (!won) continue; // confirmed, cancelled or expired elsewhere meanwhile
          outcome.expired.push(order.id);
          await inventory.restored(changes);
        } catch (err) {
          outcome.failed.push({ orderId: order.id, err });
          // The database away: every later order would wait out the same timeouts. An order's rows held by
          // another transaction are that order's trouble: the others go on.
          if ((isDatabaseUnavailable(err) || err instanceof ServiceUnavailableError) && !isRowContention(err))
            break;
        }
      }
      if (outcome.expired.length > 0) notifications.wake();
      return outcome;
    },
  };
}

export type OrderService = ReturnType<typeof createOrderService>;
