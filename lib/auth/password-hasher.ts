// bcrypt for request paths, bounded. Unbounded, 50 parallel logins filled libuv's 4 threads for seconds and
// froze everything else that needs them (image files, DNS, zlib). At most `concurrency` hashes/compares run at
// once (BCRYPT_CONCURRENCY, default cores - 1 within 1..2, leaving threads and a core for the rest), at most `queueLimit` wait; beyond that
// the caller gets 503 SERVICE_UNAVAILABLE with Retry-After at once, without costing a thread.
import { ServiceUnavailableError } from '../errors';
import { hashCost, hashPassword, verifyPassword } from './passwords';

export interface PasswordHasherOptions {
  cost: number;
  concurrency: number;
  queueLimit: number;
}

export function createPasswordHasher(options: PasswordHasherOptions) {
  const { concurrency, queueLimit } = options;
  let running = 0;
  const waiting: Array<() => void> = [];
  // A moving average of one bcrypt operation, for an honest Retry-After.
  let averageMs = 100;

  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };

  async function run<T>(work: () => Promise<T>): Promise<T> {
    if (running < concurrency) running++;
    else if (waiting.length < queueLimit) await new Promise<void>((resolve) => waiting.push(resolve));
    else {
      const seconds = Math.max(1, Math.ceil(((waiting.length + running) * averageMs) / concurrency / 1000));
      throw new ServiceUnavailableError('The server is busy checking passwords; try again shortly', seconds);
    }
    // The slot passes straight from release() to the next waiter, so `running` already counts this one.
    const started = performance.now();
    try {
      return await work();
    } finally {
      averageMs = averageMs * 0.8 + (performance.now() - started) * 0.2;
      release();
    }
  }

  return {
    hash: (password: string) => run(() => hashPassword(password, options.cost)),
    verify: (password: string, hash: string) => run(() => verifyPassword(password, hash)),
    /** Whether `hash` was made at another cost than the configured one (BCRYPT_COST changed since). */
    outdated: (hash: string) => hashCost(hash) !== options.cost,
    /** Operations running and waiting now (for tests and diagnostics). */
    load: () => ({ running, waiting: waiting.length }),
  };
}

export type PasswordHasher = ReturnType<typeof createPasswordHasher>;
