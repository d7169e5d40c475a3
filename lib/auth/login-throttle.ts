// Login throttling per (e-mail, client address), in memory (node-cache): after `maxFailures` failed
// attempts within the window, further attempts get 429 with Retry-After until the window ends.
// Attempts are counted when they START, so parallel guesses cannot slip past the limit while their
// bcrypt compares are still running; a successful login clears the counter.
import NodeCache from 'node-cache';
import { TooManyRequestsError } from '../errors';

export interface LoginThrottleOptions {
  maxFailures?: number;
  windowSeconds?: number;
  now?: () => number;
}

interface Entry {
  attempts: number;
  resetAt: number;
}

export function createLoginThrottle(options: LoginThrottleOptions = {}) {
  const maxFailures = options.maxFailures ?? 5;
  const windowSeconds = options.windowSeconds ?? 15 * 60;
  const now = options.now ?? Date.now;
  // useClones: false so an entry is updated in place and keeps its original expiry.
  const cache = new NodeCache({ stdTTL: windowSeconds, checkperiod: 60, useClones: false });

  const keyOf = (email: string, clientAddress: string) => `${email}\u0000${clientAddress}`;

  return {
    /** Counts an attempt, or throws 429 when the limit of failures in the window is reached. */
    begin(email: string, clientAddress: string): void {
      const key = keyOf(email, clientAddress);
      const at = now();
      let entry = cache.get<Entry>(key);
      if (entry && entry.resetAt <= at) {
        cache.del(key);
        entry = undefined;
      }
      if (entry && entry.attempts >= maxFailures) {
        const retryAfter = Math.max(1, Math.ceil((entry.resetAt - at) / 1000));
        throw new TooManyRequestsError(
          `Too many failed logins; try again in ${retryAfter} seconds`,
          retryAfter,
        );
      }
      if (!entry) {
        entry = { attempts: 0, resetAt: at + windowSeconds * 1000 };
        cache.set(key, entry, windowSeconds);
      }
      entry.attempts += 1;
    },

    succeeded(email: string, clientAddress: string): void {
      cache.del(keyOf(email, clientAddress));
    },

    close(): void {
      cache.close();
    },
  };
}

export type LoginThrottle = ReturnType<typeof createLoginThrottle>;
