// All of the orders area's SQL: the order reads, the compare-and-set of a status change (with its
// history and outbox rows), and the INSERTs that write placed orders. The idempotency keys have their
// own small store (idempotency.ts).
import { affectedRows, centsToDecimal, fromCents, retryDeadlocks, type Db, type Trx } from '../db';
import { CommitNotApplied, outcomeRead, transactionWithOutcome } from '../commit-outcome';
import { ServiceUnavailableError } from '../errors';
import { insertRows, insertWithIds } from '../insert-rows';
import type { Logger } from '../logger';
import { fetchPage, type PageRequest } from '../query-helpers';
import type { DecidedLine } from '../inventory/inventory';
import { writeOutbox } from '../notifications/outbox';
import { currentRequestId } from '../request-context';
import type { StockChange } from '../../actors/stock-rules';
import {
  nextStatus,
  ORDER_STATUSES,
  type Notified,
  type OrderStatus,
} from '../../actors/order-lifecycle-machine';
import { Order } from './order-model';
import { newOrderNumber } from './order-number';
import { orderJson, type OrderJson, type ShippingAddress } from './order-json';

/** One buyer's order request, decided and reserved: ready to be written. */
export interface Placement {
  buyerId: number;
  address: ShippingAddress;
  lines: DecidedLine[];
  /** idempotency_keys row whose response is written in the same transaction. */
  idempotencyKeyId?: number;
  /** The process that owns that claim (checked in the transaction: a claim taken over is not answered twice). */
  idempotencyOwner?: string;
  /** Request that placed it (written with the outbox rows, logged on delivery). */
  requestId?: string;
}

interface DraftOrder {
  placement: number;
  orderNumber: string;
  sellerId: number;
  lines: DecidedLine[];
  totalCents: number;
}

/** The fields of an order a status change needs. */
export interface OrderHead {
  id: number;
  buyer_id: number;
  status: OrderStatus;
  order_number: string;
}

/**
 * Open orders (PENDING, CONFIRMED): the ones the machine lets their buyer cancel, i.e. stock held but not yet
 * on its way. The per-product unit cap counts them.
 */
export const OPEN_STATUSES: OrderStatus[] = ORDER_STATUSES.filter(
  (status) => nextStatus(status, { type: 'CANCEL', memberId: 0, role: 'BUYER' }) === 'CANCELLED',
);

/** Lost deadlock races re-run the compare-and-set; this bounds the loop. */
const MAX_DEADLOCK_ATTEMPTS = 10;

/** The outbox event of an order's status change, for one recipient (its buyer or one of its sellers). */
const statusChanged = (order: OrderHead, from: OrderStatus, to: OrderStatus, recipientId: number) => ({
  type: 'OrderStatusChanged' as const,
  recipientId,
  payload: { buyerId: order.buyer_id, orderId: order.id, orderNumber: order.order_number, from, to },
});

/**
 * Whether the status change of `orderId` to `to` written at `changedAt` is in the database (after a lost COMMIT:
 * did it apply?). Its history row tells.
 */
async function statusChangeExists(
  db: Db,
  orderId: number,
  to: OrderStatus,
  changedAt: Date,
): Promise<boolean> {
  const history = db('order_status_history').where({
    order_id: orderId,
    to_status: to,
    changed_at: changedAt,
  });
  return Boolean(await outcomeRead(db, history).first('id'));
}

/** The outbox rows telling each seller with items in the order of its status change. */
async function notifySellers(trx: Trx, order: OrderHead, from: OrderStatus, to: OrderStatus, now: Date) {
  const sellers = (await trx('order_items')
    .where('order_id', order.id)
    .distinct('seller_id')
    .orderBy('seller_id')) as Array<{ seller_id: number }>;
  await writeOutbox(
    trx,
    sellers.map(({ seller_id: sellerId }) => statusChanged(order, from, to, Number(sellerId))),
    now,
  );
}

/** A status change's author, whom it notifies (the transition's meta) and work in its transaction. */
export interface StatusChange {
  changedBy: number | null;
  notifies: readonly Notified[];
  /** Work in the same transaction (restoring stock): after the sellers' rows, before the buyer's (see below). */
  extra?: (trx: Trx, now: Date) => Promise<void>;
}

export function createOrderRepository(db: Db, logger: Logger) {
  /**
   * One compare-and-set from `from` to `to`: null when another request changed the order first; with `answer`, the
   * order as this call's change left it (read in its transaction, so no later change shows in it). A COMMIT lost on
   * the way is checked (lib/commit-outcome.ts): applied, it is this call's change; not applied, nothing changed
   * (null, so the caller reads the order again and decides anew); unknown, 503.
   */
  async function casTransaction(
    order: OrderHead,
    from: OrderStatus,
    to: OrderStatus,
    change: StatusChange,
    answer: boolean,
  ): Promise<{ order?: OrderJson } | null> {
    const { changedBy, notifies, extra } = change;
    const outcome = {
      db,
      logger,
      committed: (changed: { at: Date; order?: OrderJson } | null) =>
        changed ? statusChangeExists(db, order.id, to, changed.at) : Promise.resolve(false),
      unknown: () =>
        new ServiceUnavailableError(
          `The database connection was lost while the order moved to ${to}; read the order before retrying`,
          1,
        ),
    };
    try {
      const changed = await transactionWithOutcome(outcome, async (trx) => {
        const now = new Date();
        const updated = affectedRows(
          await trx('orders').where({ id: order.id, status: from }).update({ status: to, updated_at: now }),
        );
        if (updated !== 1) return null;
        // The history and outbox rows' foreign keys lock member rows in share mode. Every writer locks sellers'
        // member rows, then product rows, then buyers' (an image upload: its seller, then the product; the
        // group commit with buyer caps: the product, then the buyer), so none of them waits on another in a
        // cycle (InnoDB deadlock).
        const byBuyer = changedBy !== null && changedBy === order.buyer_id;
        const history = () =>
          trx('order_status_history').insert({
            order_id: order.id,
            from_status: from,
            to_status: to,
            changed_by: changedBy,
            changed_at: now,
          });
        if (!byBuyer) await history();
        if (notifies.includes('SELLERS')) await notifySellers(trx, order, from, to, now);
        if (extra) await extra(trx, now);
        if (byBuyer) await history();
        if (notifies.includes('BUYER'))
          await writeOutbox(trx, [statusChanged(order, from, to, order.buyer_id)], now, currentRequestId());
        // The answer is read before the COMMIT, while the row is still locked: read after it, a change that
        // landed in between (the buyer's cancel after a seller's confirm) would answer the confirm.
        return { at: now, order: answer ? (await loadOrders([order.id], trx))[0] : undefined };
      });
      return changed;
    } catch (err) {
      if (err instanceof CommitNotApplied) return null;
      throw err;
    }
  }

  /** Orders with their items and history, as API JSON, newest first. */
  async function loadOrders(ids: number[], trx?: Trx): Promise<OrderJson[]> {
    if (ids.length === 0) return [];
    const orders = await Order.query(trx ?? db)
      .whereIn('id', ids)
      .withGraphFetched('[items, history]')
      .orderBy('id', 'desc');
    return orders.map(orderJson);
  }

  return {
    loadOrders,

    async findOrder(orderId: number): Promise<OrderHead | undefined> {
      return db('orders').where('id', orderId).first('id', 'buyer_id', 'status', 'order_number');
    },

    async sellerHasItems(orderId: number, sellerId: number): Promise<boolean> {
      return Boolean(await db('order_items').where({ order_id: orderId, seller_id: sellerId }).first('id'));
    },

    /** The order's lines as stock changes (what a cancellation gives back). */
    async orderLines(orderId: number): Promise<StockChange[]> {
      const items = (await db('order_items')
        .where('order_id', orderId)
        .select('product_id', 'quantity')) as Array<{
        product_id: number;
        quantity: number;
      }>;
      return items.map((item) => ({ productId: item.product_id, quantity: item.quantity }));
    },

    /** PENDING orders placed at or before `cutoff`, oldest first, at most `limit` (the expiry sweep's batch). */
    async pendingPlacedBefore(cutoff: Date, limit: number): Promise<OrderHead[]> {
      return (await db('orders')
        .where('status', 'PENDING')
        .andWhere('ordered_at', '<=', cutoff)
        .orderBy('id')
        .limit(limit)
        .select('id', 'buyer_id', 'status', 'order_number')) as OrderHead[];
    },

    /** A page of the buyer's order ids, newest first. */
    pageOfBuyer(buyerId: number, request: PageRequest & { status?: string }) {
      const query = db('orders').where('buyer_id', buyerId).orderBy('id', 'desc').select('id');
      if (request.status) query.andWhere('status', request.status);
      return fetchPage<{ id: number }>(query, request);
    },

    /** A page of the ids of orders containing the seller's products, newest first. */
    pageOfSeller(sellerId: number, request: PageRequest & { status?: string }) {
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
      return fetchPage<{ id: number }>(query, request);
    },

    /**
     * Moves an order from `from` to `to` if it is still `from` (compare-and-set), with its history row, the
     * outbox rows of whom it notifies and `extra` work, in one transaction. Returns the order as that
     * transaction left it (a request's answer); null when another request changed it first.
     */
    async transition(
      order: OrderHead,
      from: OrderStatus,
      to: OrderStatus,
      change: StatusChange,
    ): Promise<OrderJson | null> {
      // InnoDB may pick this transaction as a deadlock victim; nothing was written, so try again.
      const changed = await retryDeadlocks(
        () => casTransaction(order, from, to, change, true),
        MAX_DEADLOCK_ATTEMPTS,
      );
      return changed?.order ?? null;
    },

    /** transition() that answers no one (the expiry sweep): whether it made the change, without reading the order. */
    async compareAndSet(
      order: OrderHead,
      from: OrderStatus,
      to: OrderStatus,
      change: StatusChange,
    ): Promise<boolean> {
      const changed = await retryDeadlocks(
        () => casTransaction(order, from, to, change, false),
        MAX_DEADLOCK_ATTEMPTS,
      );
      return changed !== null;
    },
  };
}

export type OrderRepository = ReturnType<typeof createOrderRepository>;

/**
 * Inside the orders' transaction, before anything is written: the placements whose idempotency claim is
 * no longer theirs (its lease ran out and another request took it over). The UPDATE also locks each
 * claim row until COMMIT, so a takeover cannot slip in between this check and the stored response.
 */
export async function lostClaims(trx: Trx, placements: Placement[]): Promise<number[]> {
  const lost: number[] = [];
  for (const [index, placement] of placements.entries()) {
    if (placement.idempotencyKeyId === undefined) continue;
    const held = affectedRows(
      await trx('idempotency_keys')
        .where({ id: placement.idempotencyKeyId, owner_id: placement.idempotencyOwner ?? null })
        .whereNull('response_status')
        .update({ owner_id: placement.idempotencyOwner }),
    );
    if (held !== 1) lost.push(index);
  }
  return lost;
}

/** Whether orders with these numbers exist (after a lost COMMIT: did it apply?). */
export async function ordersExist(db: Db, orderNumbers: string[]): Promise<boolean> {
  if (orderNumbers.length === 0) return false;
  const orders = db('orders').whereIn('order_number', orderNumbers).count({ n: '*' });
  const found = (await outcomeRead(db, orders).first()) as { n: number | string };
  return Number(found.n) > 0;
}

/**
 * Writes decided placements inside the caller's transaction (one order request or a whole group-commit
 * batch alike): multi-row INSERTs of the orders (one per seller), their items with name and price
 * snapshots, the first history row (null -> PENDING), the OrderCreated outbox rows and, for requests
 * with an Idempotency-Key, the response to replay. Returns each placement's orders, in placement order.
 */
export async function insertPlacements(trx: Trx, placements: Placement[], now: Date): Promise<OrderJson[][]> {
  const drafts: DraftOrder[] = [];
  placements.forEach((placement, index) => {
    const bySeller = new Map<number, DecidedLine[]>();
    for (const line of placement.lines) {
      const group = bySeller.get(line.product.sellerId) ?? [];
      group.push(line);
      bySeller.set(line.product.sellerId, group);
    }
    for (const [sellerId, lines] of [...bySeller].sort((a, b) => a[0] - b[0])) {
      lines.sort((a, b) => a.product.id - b.product.id);
      const totalCents = lines.reduce((sum, line) => sum + line.product.priceCents * line.quantity, 0);
      drafts.push({ placement: index, orderNumber: newOrderNumber(now), sellerId, lines, totalCents });
    }
  });

  const insertedOrderIds = await insertWithIds(
    trx,
    'orders',
    drafts.map((draft) => {
      const { address } = placements[draft.placement];
      return {
        order_number: draft.orderNumber,
        buyer_id: placements[draft.placement].buyerId,
        status: 'PENDING',
        total_amount: centsToDecimal(draft.totalCents),
        zip_code: address.zipCode,
        address: address.address,
        address_detail: address.addressDetail,
        receiver_name: address.receiverName,
        receiver_phone: address.receiverPhone,
        ordered_at: now,
        updated_at: now,
      };
    }),
  );
  // Ids by order number when the database does not promise consecutive ids.
  let orderIds: Map<string, number>;
  if (insertedOrderIds) {
    orderIds = new Map(drafts.map((draft, index) => [draft.orderNumber, insertedOrderIds[index]]));
  } else {
    // Ids by order number: a multi-row INSERT reports only one id, and consecutive ids are not promised.
    const idRows = (await trx('orders')
      .whereIn(
        'order_number',
        drafts.map((draft) => draft.orderNumber),
      )
      .select('id', 'order_number')) as Array<{ id: number; order_number: string }>;
    orderIds = new Map(idRows.map((row) => [row.order_number, Number(row.id)]));
  }
  const idOf = (draft: DraftOrder) => orderIds.get(draft.orderNumber)!;

  const itemRowsToInsert = drafts.flatMap((draft) =>
    draft.lines.map((line) => ({
      order_id: idOf(draft),
      product_id: line.product.id,
      seller_id: line.product.sellerId,
      product_name: line.product.name,
      product_price: centsToDecimal(line.product.priceCents),
      quantity: line.quantity,
      subtotal: centsToDecimal(line.product.priceCents * line.quantity),
    })),
  );
  const insertedItemIds = await insertWithIds(trx, 'order_items', itemRowsToInsert);
  const itemKey = (orderId: number, productId: number) => `${orderId}:${productId}`;
  let itemIds: Map<string, number>;
  if (insertedItemIds) {
    itemIds = new Map(
      itemRowsToInsert.map((row, index) => [itemKey(row.order_id, row.product_id), insertedItemIds[index]]),
    );
  } else {
    const itemRows = (await trx('order_items')
      .whereIn('order_id', [...orderIds.values()])
      .select('id', 'order_id', 'product_id')) as Array<{ id: number; order_id: number; product_id: number }>;
    itemIds = new Map(
      itemRows.map((row) => [itemKey(Number(row.order_id), Number(row.product_id)), Number(row.id)]),
    );
  }

  await insertRows(
    trx,
    'order_status_history',
    drafts.map((draft) => ({
      order_id: idOf(draft),
      from_status: null,
      to_status: 'PENDING',
      changed_by: placements[draft.placement].buyerId,
      changed_at: now,
    })),
  );

  // One multi-row outbox insert for the whole batch; each event keeps the id of the request that placed
  // it, which travels to the delivery log.
  await writeOutbox(
    trx,
    drafts.map((draft) => ({
      type: 'OrderCreated' as const,
      recipientId: draft.sellerId,
      payload: { sellerId: draft.sellerId, orderId: idOf(draft), orderNumber: draft.orderNumber },
      requestId: placements[draft.placement].requestId ?? null,
    })),
    now,
  );

  const results: OrderJson[][] = placements.map(() => []);
  const iso = now.toISOString();
  for (const draft of drafts) {
    const placement = placements[draft.placement];
    const id = idOf(draft);
    results[draft.placement].push({
      id,
      orderNumber: draft.orderNumber,
      buyerId: placement.buyerId,
      status: 'PENDING',
      totalAmount: fromCents(draft.totalCents),
      shippingAddress: { ...placement.address },
      items: draft.lines.map((line) => ({
        id: itemIds.get(itemKey(id, line.product.id))!,
        productId: line.product.id,
        sellerId: line.product.sellerId,
        productName: line.product.name,
        productPrice: fromCents(line.product.priceCents),
        quantity: line.quantity,
        subtotal: fromCents(line.product.priceCents * line.quantity),
      })),
      statusHistory: [{ from: null, to: 'PENDING', changedBy: placement.buyerId, changedAt: iso }],
      orderedAt: iso,
      updatedAt: iso,
    });
  }

  for (const [index, placement] of placements.entries()) {
    if (placement.idempotencyKeyId === undefined) continue;
    await trx('idempotency_keys')
      .where('id', placement.idempotencyKeyId)
      .update({ response_status: 201, response_body: JSON.stringify({ orders: results[index] }) });
  }
  return results;
}

/**
 * Locks the buyers' member rows until COMMIT (one UPDATE that changes nothing; InnoDB walks the primary key
 * in id order, so two transactions never take them in opposite orders). It serialises a buyer's placements
 * across transactions and processes; SQLite holds its one write lock already. On MySQL the reads that
 * follow take their snapshot after the lock was granted, so they see every placement committed before.
 */
export async function lockBuyers(trx: Trx, buyerIds: number[]): Promise<void> {
  await trx('members')
    .whereIn(
      'id',
      [...buyerIds].sort((a, b) => a - b),
    )
    .update({ updated_at: trx.ref('updated_at') });
}

/** Per buyer: PENDING orders, and units of `productIds` in open (PENDING or CONFIRMED) orders. */
export async function openHoldings(
  trx: Db | Trx,
  buyerIds: number[],
  productIds: number[],
): Promise<Map<number, { pending: number; units: Map<number, number> }>> {
  const held = new Map(buyerIds.map((id) => [id, { pending: 0, units: new Map<number, number>() }]));
  const pending = (await trx('orders')
    .whereIn('buyer_id', buyerIds)
    .andWhere('status', 'PENDING')
    .groupBy('buyer_id')
    .select('buyer_id')
    .count({ n: '*' })) as Array<{ buyer_id: number; n: number | string }>;
  for (const row of pending) held.get(Number(row.buyer_id))!.pending = Number(row.n);
  if (productIds.length > 0) {
    const units = (await trx('order_items')
      .join('orders', 'orders.id', 'order_items.order_id')
      .whereIn('orders.buyer_id', buyerIds)
      .whereIn('orders.status', OPEN_STATUSES)
      .whereIn('order_items.product_id', productIds)
      .groupBy('orders.buyer_id', 'order_items.product_id')
      .select('orders.buyer_id', 'order_items.product_id')
      .sum({ n: 'order_items.quantity' })) as Array<{
      buyer_id: number;
      product_id: number;
      n: number | string;
    }>;
    for (const row of units) held.get(Number(row.buyer_id))!.units.set(Number(row.product_id), Number(row.n));
  }
  return held;
}
