// The login throttle, shared by every instance through the database (lib/limits/rate-limits.ts). Failed
// password checks are counted per (e-mail, client address) and, as ceilings, per e-mail over all
// addresses, per address over all e-mails (password spraying) and over everything; an IPv6 address counts by
// its /64 (clientNetwork). An attempt counts when it STARTS, so parallel guesses cannot slip past a limit while
// their bcrypt compares run; a success clears the (e-mail, address) counter and gives its point back to the
// ceilings, so they count failures.
// PATCH /members/me's currentPassword check has a bucket of its own per member (checkCurrentPassword): failed
// logins, the e-mail ceiling included, never keep a signed-in member from changing a password.
import type { Config } from '../config';
import { clientNetwork, limitKey, type Limiter, type RateLimits } from '../limits/rate-limits';

export interface LoginThrottleDeps {
  config: Config;
  rateLimits: RateLimits;
}

interface Bucket {
  limiter: Limiter;
  key: (email: string, address: string) => string;
  message: string;
}

export function createLoginThrottle(deps: LoginThrottleDeps) {
  const { login } = deps.config.limits;
  const make = deps.rateLimits.limiter;
  const pair: Bucket = {
    limiter: make('login_pair', login.failures)!,
    key: (email, address) => limitKey(email, clientNetwork(address)),
    message: 'Too many failed logins for this account from this address',
  };
  const ceilings: Bucket[] = [
    {
      limiter: make('login_email', login.email),
      key: (email: string) => limitKey(email),
      message: 'Too many failed logins for this account',
    },
    {
      limiter: make('login_address', login.address),
      key: (_email: string, address: string) => limitKey(clientNetwork(address)),
      message: 'Too many failed logins from this address',
    },
    {
      limiter: make('login_global', login.global),
      key: () => 'all',
      message: 'Too many failed logins; the service is throttling logins',
    },
  ].filter((bucket): bucket is Bucket => bucket.limiter !== null);
  const buckets = [pair, ...ceilings];
  // Per member, over every address (a stolen access token may come from many); the pair's rate.
  const currentPassword = make('current_password', login.failures)!;

  const refundAll = (email: string, address: string) =>
    Promise.all(buckets.map((b) => b.limiter.refund(b.key(email, address))));

  const throttle = {
    /** Counts an attempt in every bucket, or throws 429 when one is full (the others get their point back). */
    async begin(email: string, address: string): Promise<void> {
      const counted: Bucket[] = [];
      try {
        for (const bucket of buckets) {
          await bucket.limiter.consume(bucket.key(email, address), bucket.message);
          counted.push(bucket);
        }
      } catch (err) {
        // A refused attempt never reaches the password check, so it is no failure for the other buckets.
        await Promise.all(counted.map((b) => b.limiter.refund(b.key(email, address))));
        throw err;
      }
    },

    /** The password matched: this attempt was no failure. */
    async succeeded(email: string, address: string): Promise<void> {
      await pair.limiter.clear(pair.key(email, address));
      await Promise.all(ceilings.map((b) => b.limiter.refund(b.key(email, address))));
    },

    /**
     * A password check inside the throttle: counted when it starts (429 when a bucket is full); `passes` true
     * clears the attempt as `succeeded` does. A check that could not be made (it threw: the server too busy to hash,
     * the database down) was no failure either: every bucket gets its point back, so a busy server never locks a
     * member out. Resolves to whether it passed.
     */
    async check(email: string, address: string, passes: () => Promise<boolean>): Promise<boolean> {
      await throttle.begin(email, address);
      let passed: boolean;
      try {
        passed = await passes();
      } catch (err) {
        await refundAll(email, address).catch(() => undefined);
        throw err;
      }
      if (passed) await throttle.succeeded(email, address);
      return passed;
    },

    /**
     * PATCH /members/me's currentPassword check, in its own bucket per member (LOGIN_FAILURE_LIMIT, over every
     * address), counted as `check` counts: a stolen access token is no unlimited password oracle, and someone
     * failing logins for the member's e-mail cannot keep the member from changing the password. A right one
     * clears the bucket; a check that could not be made gives its point back.
     */
    async checkCurrentPassword(memberId: number, passes: () => Promise<boolean>): Promise<boolean> {
      const key = limitKey(String(memberId));
      await currentPassword.consume(key, 'Too many wrong current passwords for this account');
      let passed: boolean;
      try {
        passed = await passes();
      } catch (err) {
        await currentPassword.refund(key).catch(() => undefined);
        throw err;
      }
      if (passed) await currentPassword.clear(key);
      return passed;
    },
  };
  return throttle;
}

export type LoginThrottle = ReturnType<typeof createLoginThrottle>;
