// The transactional outbox: events are written in the SAME transaction as the change that causes them,
// so an event exists if and only if its cause committed. The dispatcher delivers them after commit.
import { dialect, type Db, type Trx } from '../db';
import { insertRows } from '../insert-rows';
import { deleteInBatches } from '../query-helpers';
import { currentRequestId } from '../request-context';
import type { OrderCreatedPayload, OrderStatusChangedPayload } from './notification-schemas';

export type OutboxEvent = (
  | {
      type: 'OrderCreated';
      recipientId: number;
      payload: OrderCreatedPayload;
    }
  | {
      type: 'OrderStatusChanged';
      recipientId: number;
      payload: OrderStatusChangedPayload;
    }
) & {
  /** The request that caused the event, when it is not the current one (a group commit writes many). */
  requestId?: string | null;
};

export interface OutboxRow {
  event_type: string;
  recipient_id: number;
  payload: string;
  request_id: string | null;
  attempts: number;
  next_attempt_at: Date;
  created_at: Date;
}

/** Outbox rows for `events`, carrying the current request id (delivery logs it). */
export function outboxRows(events: OutboxEvent[], now: Date, requestId = currentRequestId()): OutboxRow[] {
  return events.map((event) => ({
    event_type: event.type,
    recipient_id: event.recipientId,
    payload: JSON.stringify(event.payload),
    request_id: (event.requestId === undefined ? requestId : event.requestId) ?? null,
    attempts: 0,
    next_attempt_at: now,
    created_at: now,
  }));
}

/**
 * Inserts the events inside `trx`: one multi-row INSERT, prebuilt (a group commit writes one row per order
 * of its batch; the batch cost ~90 us more CPU per 32 orders through knex's builder, bench:order-writes 2026-11-25).
 */
export async function writeOutbox(
  trx: Trx,
  events: OutboxEvent[],
  now: Date,
  requestId?: string | null,
): Promise<void> {
  if (events.length === 0) return;
  await insertRows(trx, 'notification_outbox', outboxRows(events, now, requestId ?? currentRequestId()));
}

/**
 * Rows not yet delivered (the metrics gauge). Served by the pending index; `timeoutMs` bounds the wait so a
 * slow database never stalls a scrape (knex cancels the query on MySQL).
 */
export async function countPendingOutbox(db: Db, timeoutMs: number): Promise<number> {
  const row = (await db('notification_outbox')
    .whereNull('delivered_at')
    .count({ pending: '*' })
    .first()
    .timeout(timeoutMs, { cancel: dialect.isMysql(db) })) as { pending: number | string } | undefined;
  return Number(row?.pending ?? 0);
}

/**
 * How long a delivered outbox row is kept: its notification is in `notifications` (the member's list) and its log
 * line written; only a lost COMMIT's check reads it again, within seconds.
 */
export const DELIVERED_OUTBOX_KEPT_MS = 24 * 60 * 60 * 1000;

/**
 * Scheduled pruning: rows delivered more than DELIVERED_OUTBOX_KEPT_MS ago, a batch at a time. The row with the
 * highest id always stays, so the table's next id never starts over (a server that restarts its AUTO_INCREMENT
 * from the highest row left would hand out an outbox id a notification already names, and its delivery would
 * collapse into that notification). `signal`: see deleteInBatches.
 */
export async function pruneDeliveredOutbox(db: Db, now: Date, signal?: AbortSignal): Promise<number> {
  const before = new Date(now.getTime() - DELIVERED_OUTBOX_KEPT_MS);
  const newest = (await db('notification_outbox').max({ id: 'id' }).first()) as
    { id: number | null } | undefined;
  if (!newest?.id) return 0;
  return deleteInBatches(
    db,
    'notification_outbox',
    (q) => q.where('delivered_at', '<', before).where('id', '<', newest.id!),
    signal,
  );
}
