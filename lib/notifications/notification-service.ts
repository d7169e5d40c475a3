// Members read their own notifications (newest first, paged). Newest by cause: the outbox id, assigned in the
// transaction of the change that caused the notification, so a member's notifications list in the order their
// causes committed, whichever delivery (a retry, another instance's dispatcher) came first. createdAt is the
// cause's time too (the outbox row's).
import type { Db } from '../db';
import { fetchPage, mapPage, type PageRequest, type PageSlice } from '../query-helpers';
import type { NotificationJson } from './notification-schemas';

export type { NotificationJson };

interface NotificationRow {
  id: number | string;
  type: string;
  payload: string;
  created_at: Date | string | number;
  read_at: Date | string | number | null;
}

const iso = (value: Date | string | number) => new Date(value).toISOString();

export function createNotificationService({ db }: { db: Db }) {
  return {
    async listOwn(memberId: number, request: PageRequest): Promise<PageSlice<NotificationJson>> {
      const query = db('notifications')
        .where('member_id', memberId)
        .orderBy('outbox_id', 'desc')
        .select('id', 'type', 'payload', 'created_at', 'read_at');
      const page = await fetchPage<NotificationRow>(query, request);
      return mapPage(page, (rows) =>
        rows.map(
          (row) =>
            // The row's type and payload were written together from one OutboxEvent (outbox.ts).
            ({
              id: Number(row.id),
              type: row.type,
              payload: JSON.parse(row.payload),
              createdAt: iso(row.created_at),
              readAt: row.read_at === null ? null : iso(row.read_at),
            }) as NotificationJson,
        ),
      );
    },
  };
}

export type NotificationService = ReturnType<typeof createNotificationService>;
