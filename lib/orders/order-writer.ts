// Writes placed orders inside a caller's transaction, for one order request or a whole group-commit
// batch alike (both inventory modes share this): multi-row INSERTs of the orders (one per seller), their
// items with name and price snapshots, the first history row (null -> PENDING), the OrderCreated outbox
// rows and, for requests with an Idempotency-Key, the response to replay.
import type { Knex } from 'knex';
import { centsToDecimal, fromCents } from '../db';
import { writeOutbox } from '../notifications/outbox';
import type { ProductView } from '../inventory/stock-sql';
import { insertWithIds } from './insert-ids';
import { ValidationError } from '../errors';
import { newOrderNumber } from './order-number';
import type { OrderJson, ShippingAddress } from './order-json';

export interface PlacementLine {
  product: ProductView;
  quantity: number;
}

/** One buyer's order request, decided and reserved: ready to be written. */
export interface Placement {
  buyerId: number;
  address: ShippingAddress;
  lines: PlacementLine[];
  /** idempotency_keys row whose response is written in the same transaction. */
  idempotencyKeyId?: number;
  /** Request that placed it (written with the outbox rows, logged on delivery). */
  requestId?: string;
}

interface DraftOrder {
  placement: number;
  orderNumber: string;
  sellerId: number;
  lines: PlacementLine[];
  totalCents: number;
}

/** DECIMAL(12,2): the largest amount an order's total (and so each subtotal) can hold, in cents. */
export const MAX_AMOUNT_CENTS = 999_999_999_999;

/**
 * Refuses (400) a placement whose order for some seller would not fit DECIMAL(12,2), before anything is
 * written, so one oversized cart never fails the other requests of a group commit.
 */
export function assertAmountsFit(lines: PlacementLine[]): void {
  const totals = new Map<number, number>();
  for (const line of lines) {
    totals.set(
      line.product.sellerId,
      (totals.get(line.product.sellerId) ?? 0) + line.product.priceCents * line.quantity,
    );
  }
  for (const total of totals.values()) {
    if (total > MAX_AMOUNT_CENTS) {
      throw new ValidationError('Order total is too large', [
        { field: 'orderItems', message: `an order's total must be at most ${MAX_AMOUNT_CENTS / 100}` },
      ]);
    }
  }
}

/** Writes `placements`; returns each placement's orders as API JSON, in placement order. */
export async function writePlacements(
  trx: Knex.Transaction,
  placements: Placement[],
  now: Date,
): Promise<OrderJson[][]> {
  const drafts: DraftOrder[] = [];
  placements.forEach((placement, index) => {
    const bySeller = new Map<number, PlacementLine[]>();
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

  await trx('order_status_history').insert(
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
