// Idempotency-Key for order placement (API.md): the same buyer and key within 24 h get the first
// response again and nothing new is created; the same key with a different body is 409
// IDEMPOTENCY_KEY_REUSED. The key row is claimed BEFORE the work (a unique index on buyer+key), and the
// successful response is stored in the same transaction as the orders. A failed attempt frees the key.
//
// A claim belongs to one request (`owner_id`: this process and a sequence number, new at every claim and
// takeover, so two requests of one process are told apart too) and lives as long as its lease (`lease_until`),
// which the owner renews while its request runs. A duplicate never takes a claim over by age: only when the
// lease ran out (the owner died, stalled, or lost the database for longer than a lease), with a compare-and-set
// in SQL, so any number of requests on any number of instances agree on one owner. The orders' transaction
// re-checks the ownership (the fence in order-repository.ts), so an owner that lost its claim cannot commit a
// second order, and its release cannot free the claim of the request that took it over.
import crypto from 'node:crypto';
import type { Db } from '../db';
import { affectedRows, isUniqueViolation } from '../db';
import { safeErrorMessage } from '../db-errors';
import { deleteInBatches } from '../query-helpers';
import { ConflictError, IdempotencyKeyInProgressError } from '../errors';
import type { Logger } from '../logger';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const POLL_MS = 50;

/** A claim held by this process: `end()` stops renewing its lease once the request is over. */
export interface HeldClaim {
  kind: 'claimed';
  id: number;
  owner: string;
  end(): void;
}

export type IdempotencyClaim = HeldClaim | { kind: 'replay'; status: number; body: unknown };

interface KeyRow {
  id: number;
  request_hash: string;
  response_status: number | null;
  response_body: string | null;
  lease_until: Date | string | number | null;
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

export interface IdempotencyStoreDeps {
  db: Db;
  logger: Logger;
  /** How long a claim stays owned without a renewal; renewed every quarter of it. */
  leaseMs: number;
  /** How long a duplicate waits for the first request's result before 409 IDEMPOTENCY_KEY_IN_PROGRESS. */
  waitMs: number;
}

export function createIdempotencyStore({ db, logger, leaseMs, waitMs }: IdempotencyStoreDeps) {
  const log = logger.child({ component: 'Idempotency' });
  /** This process; each claim's owner adds a sequence number to it. */
  const processTag = `${process.pid}-${crypto.randomBytes(8).toString('hex')}`;
  let claims = 0;
  const nextOwner = () => `${processTag}-${(claims += 1)}`;
  const retryAfterSeconds = Math.max(1, Math.ceil(leaseMs / 1000));

  /** Renews the claim's lease until `end()` (or until the claim is answered or lost). */
  function hold(id: number, owner: string): HeldClaim {
    let ended = false;
    let timer: NodeJS.Timeout | undefined;
    const renew = async () => {
      try {
        const renewed = affectedRows(
          await db('idempotency_keys')
            .where({ id, owner_id: owner })
            .whereNull('response_status')
            .update({ lease_until: new Date(Date.now() + leaseMs) }),
        );
        if (renewed === 0) ended = true; // answered, or taken over: nothing left to keep alive
      } catch (err) {
        // A missed renewal is not fatal: the lease covers three more. Only the message, without a stack, and without
        // the SQL and its values that knex puts in front of it (the logger's rule for database errors).
        log.warn({ err: { message: safeErrorMessage(err) } }, 'Renewing an idempotency lease failed');
      }
      if (!ended) timer = setTimeout(() => void renew(), leaseMs / 4);
    };
    timer = setTimeout(() => void renew(), leaseMs / 4);
    return {
      kind: 'claimed',
      id,
      owner,
      end() {
        ended = true;
        clearTimeout(timer);
      },
    };
  }

  return {
    /** Claims `key` for this request, or returns the stored response of the first request with it. */
    async claim(buyerId: number, key: string, body: unknown): Promise<IdempotencyClaim> {
      const hash = requestHash(body);
      const deadline = Date.now() + waitMs;
      for (;;) {
        const now = new Date();
        const owner = nextOwner();
        try {
          const [id] = await db('idempotency_keys').insert({
            buyer_id: buyerId,
            idem_key: key,
            request_hash: hash,
            response_status: null,
            response_body: null,
            created_at: now,
            expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
            owner_id: owner,
            lease_until: new Date(now.getTime() + leaseMs),
          });
          return hold(Number(id), owner);
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
        if (row.lease_until === null || new Date(row.lease_until).getTime() < now.getTime()) {
          // The owner is gone. Compare-and-set: of several duplicates (on any instance) one wins.
          const taken = affectedRows(
            await db('idempotency_keys')
              .where('id', row.id)
              .whereNull('response_status')
              .andWhere((q) => q.whereNull('lease_until').orWhere('lease_until', '<', now))
              .update({ owner_id: owner, lease_until: new Date(Date.now() + leaseMs) }),
          );
          if (taken === 1) {
            log.info({ claimId: row.id }, 'Took over an idempotency claim whose owner is gone');
            return hold(row.id, owner);
          }
          continue;
        }
        if (Date.now() + POLL_MS > deadline) throw new IdempotencyKeyInProgressError(retryAfterSeconds);
        await sleep(POLL_MS); // the first request with this key is still running
      }
    },

    /** Scheduled pruning: keys past their 24 h window, a batch at a time (`signal`: see deleteInBatches). */
    async prune(now = new Date(), signal?: AbortSignal): Promise<number> {
      return deleteInBatches(db, 'idempotency_keys', (q) => q.where('expires_at', '<', now), signal);
    },

    /** Frees a claim whose request failed (its response was never stored), unless another request took it. */
    async release(claim: HeldClaim): Promise<void> {
      claim.end();
      await db('idempotency_keys')
        .where({ id: claim.id, owner_id: claim.owner })
        .whereNull('response_status')
        .delete();
    },
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;
