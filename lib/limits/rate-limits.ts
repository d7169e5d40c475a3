// Rate limiters whose counters live in the shared database (rate-limiter-flexible's MySQL or SQLite store
// on our knex pool, table `rate_limits` from migration 20261122000040), so a limit holds across any number
// of instances and across restarts. Keys are hashed: bounded ASCII, and no e-mail or address at rest.
import crypto from 'node:crypto';
import net from 'node:net';
import { RateLimiterMySQL, RateLimiterRes, RateLimiterSQLite } from 'rate-limiter-flexible';
import type { RateLimit } from '../config';
import { dialect, retryDeadlocks, type Db } from '../db';
import { TooManyRequestsError } from '../errors';
import type { Logger } from '../logger';

const TABLE = 'rate_limits';
const SWEEP_EVERY_MS = 5 * 60 * 1000;

export interface Limiter {
  /** Counts one point for `key`, or throws 429 (Retry-After = seconds until the window ends). */
  consume(key: string, message: string): Promise<void>;
  /** Gives one point back (an attempt that turned out not to count), within the window that counted it. */
  refund(key: string): Promise<void>;
  /** Forgets `key`'s counter. */
  clear(key: string): Promise<void>;
}

export const limitKey = (...parts: string[]) =>
  crypto.createHash('sha256').update(parts.join('\u0000')).digest('hex');

/**
 * The network a client address is limited as. An IPv6 client counts by its /64: one subscriber is usually
 * given a whole /64 (RFC 6177), so per address it could spread its attempts over 2^64 of them. An IPv4 address
 * counts as itself, also written inside IPv6 (mapped `::ffff:192.0.2.1`, translated `::ffff:0:192.0.2.1`,
 * compatible `::192.0.2.1`, or behind NAT64's `64:ff9b::192.0.2.1`), and with a port or brackets as a proxy may
 * forward it. Anything else (no address known) is kept as it is.
 */
export function clientNetwork(forwarded: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(forwarded);
  const ipv4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(forwarded);
  const address = bracketed?.[1] ?? ipv4WithPort?.[1] ?? forwarded;
  if (!net.isIPv6(address)) return address;
  const groups = ipv6Groups(address.split('%')[0]);
  if (embedsIpv4(groups)) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

/** The /96 prefixes whose last 32 bits are an IPv4 address (RFC 4291, RFC 2765, RFC 6052). */
function embedsIpv4(groups: number[]): boolean {
  const [a, b, c, d, e, f] = groups;
  const zeroTo = (n: number) => groups.slice(0, n).every((group) => group === 0);
  if (zeroTo(5) && f === 0xffff) return true; // ::ffff:a.b.c.d, mapped
  if (zeroTo(4) && e === 0xffff && f === 0) return true; // ::ffff:0:a.b.c.d, translated
  if (zeroTo(6) && (groups[6] !== 0 || groups[7] > 1)) return true; // ::a.b.c.d, compatible (not :: or ::1)
  return a === 0x64 && b === 0xff9b && c === 0 && d === 0 && e === 0 && f === 0; // 64:ff9b::a.b.c.d, NAT64
}

/** The eight 16-bit groups of a valid IPv6 address ('::' and a dotted IPv4 tail expanded). */
function ipv6Groups(address: string): number[] {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const split = (part: string | undefined) => (part ? part.split(':') : []);
  const front = split(head);
  const back = split(tail);
  const last = tail === undefined ? front : back;
  const ipv4 = last.at(-1)?.includes('.') ? last.pop()!.split('.').map(Number) : null;
  const numbers = (groups: string[]) => groups.map((group) => parseInt(group, 16));
  const tailNumbers = ipv4 ? [(ipv4[0] << 8) | ipv4[1], (ipv4[2] << 8) | ipv4[3]] : [];
  const zeros = new Array<number>(8 - front.length - back.length - tailNumbers.length).fill(0);
  return tail === undefined
    ? [...numbers(front), ...tailNumbers]
    : [...numbers(front), ...zeros, ...numbers(back), ...tailNumbers];
}

export function retryAfterSeconds(msBeforeNext: number): number {
  return Math.max(1, Math.ceil(msBeforeNext / 1000));
}

export function createRateLimits(deps: { db: Db; logger: Logger }) {
  const { db } = deps;
  const log = deps.logger.child({ component: 'RateLimits' });
  const mysql = dialect.isMysql(db);
  const dbName = mysql ? String((db.client.config.connection as { database: string }).database) : '';
  let sweeper: NodeJS.Timeout | null = null;

  function limiter(name: string, limit: RateLimit | null): Limiter | null {
    if (!limit) return null;
    const options = {
      storeClient: db,
      storeType: 'knex',
      keyPrefix: name,
      points: limit.points,
      duration: limit.seconds,
      tableName: TABLE,
      tableCreated: true, // the migration made it
      clearExpiredByTimeout: false, // sweep() below, one timer for the shared table
    };
    const store = mysql ? new RateLimiterMySQL({ ...options, dbName }) : new RateLimiterSQLite(options);
    // Every store call is one short transaction on a shared counter row (an upsert, then a read): on MariaDB
    // concurrent upserts can deadlock, and the victim, rolled back entirely, is simply run again.
    return {
      async consume(key, message) {
        try {
          await retryDeadlocks(() => store.consume(key, 1));
        } catch (err) {
          if (err instanceof RateLimiterRes) {
            throw new TooManyRequestsError(message, retryAfterSeconds(err.msBeforeNext));
          }
          throw err;
        }
      },
      async refund(key) {
        // Only inside the window the point was counted in, and never below zero: rate-limiter-flexible's reward
        // opens a new window at -1 when the old one has ended, an extra attempt each time. One row, one lock.
        await retryDeadlocks(() =>
          db(TABLE)
            .where('key', store.getKey(key))
            .andWhere('expire', '>', Date.now())
            .andWhere('points', '>', 0)
            .decrement('points', 1),
        );
      },
      async clear(key) {
        await retryDeadlocks(() => store.delete(key));
      },
    };
  }

  async function sweep(): Promise<number> {
    return db(TABLE).where('expire', '<', Date.now()).delete();
  }

  return {
    limiter,
    sweep,
    start(): void {
      sweeper = setInterval(() => {
        sweep().catch((err) => log.warn({ err }, 'Sweeping expired rate limit counters failed'));
      }, SWEEP_EVERY_MS);
      sweeper.unref();
    },
    stop(): void {
      if (sweeper) clearInterval(sweeper);
      sweeper = null;
    },
  };
}

export type RateLimits = ReturnType<typeof createRateLimits>;
