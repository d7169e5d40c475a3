// Idempotency-Key for order placement (API.md): the same buyer and key within 24 h get the first
// response again and nothing new is created; the same key with a different body is 409
// IDEMPOTENCY_KEY_REUSED. The key row is claimed BEFORE the work (a unique index on buyer+key), so
// concurrent duplicates wait for the first one instead of placing a second order; the successful
// response is stored in the same transaction as the orders. A failed attempt frees the key.
import crypto from 'node:crypto';
import type { Db } from '../db';
import { affectedRows, isUniqueViolation } from '../db';
import { ConflictError, ServiceUnavailableError } from '../errors';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** A claim without a response this old was left by a crashed process (the response is written with the orders). */
const STALE_CLAIM_MS = 30_000;
const WAIT_LIMIT_MS = 30_000;

export type IdempotencyClaim =
  { kind: 'claimed'; id: number } | { kind: 'replay'; status: number; body: unknown };

interface KeyRow {
  id: number;
  request_hash: string;
  response_status: number | null;
  response_body: string | null;
  created_at: Date | string | number;
  expires_at: Date | string | number;
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

export function requestHash(body: unknown): string {
  return crypto
    .createHash('sha256')
    .update(JSON.stringify(canonical(body)))
    .digest('hex');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function createIdempotencyStore({ db }: { db: Db }) {
  return {
    /** Claims `key` for this request, or returns the stored response of the first request with it. */
    async claim(buyerId: number, key: string, body: unknown): Promise<IdempotencyClaim> {
      const hash = requestHash(body);
      const deadline = Date.now() + WAIT_LIMIT_MS;
      for (;;) {
        const now = new Date();
        try {
          const [id] = await db('idempotency_keys').insert({
            buyer_id: buyerId,
            idem_key: key,
            request_hash: hash,
            response_status: null,
            response_body: null,
            created_at: now,
            expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
          });
          return { kind: 'claimed', id: Number(id) };
        } catch (err) {
          if (!isUniqueViolation(err)) throw err;
        }
        const row = (await db('idempotency_keys').where({ buyer_id: buyerId, idem_key: key }).first()) as
          KeyRow | undefined;
        if (!row) continue; // freed meanwhile: claim it
        if (new Date(row.expires_at).getTime() <= now.getTime()) {
          await db('idempotency_keys').where('id', row.id).andWhere('expires_at', '<=', now).delete();
          continue;
        }
        if (row.request_hash !== hash) {
          throw new ConflictError(
            'IDEMPOTENCY_KEY_REUSED',
            'This Idempotency-Key was already used with a different request body',
          );
        }
        if (row.response_status !== null) {
          return {
            kind: 'replay',
            status: row.response_status,
            body: JSON.parse(row.response_body ?? 'null'),
          };
        }
        if (now.getTime() - new Date(row.created_at).getTime() > STALE_CLAIM_MS) {
          await db('idempotency_keys').where('id', row.id).whereNull('response_status').delete();
          continue;
        }
        if (Date.now() > deadline)
          throw new ServiceUnavailableError('The first request with this Idempotency-Key is still running');
        await sleep(20); // the first request with this key is still running
      }
    },

    /** Scheduled pruning: keys past their 24 h window, a batch at a time. */
    async prune(now = new Date()): Promise<number> {
      let deleted = 0;
      for (;;) {
        const ids = (
          (await db('idempotency_keys').where('expires_at', '<', now).select('id').limit(1000)) as Array<{
            id: number;
          }>
        ).map((r) => r.id);
        if (ids.length === 0) return deleted;
        deleted += affectedRows(await db('idempotency_keys').whereIn('id', ids).delete());
        if (ids.length < 1000) return deleted;
      }
    },

    /** Frees a claim whose request failed (its response was never stored). */
    async release(id: number): Promise<void> {
      await db('idempotency_keys').where('id', id).whereNull('response_status').delete();
    },
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;
