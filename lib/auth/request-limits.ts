// Request limits for signup and refresh (every request counts, success or not): per client address and
// over all addresses, shared by every instance through the database. They bound signup floods and
// refresh loops; the login throttle (login-throttle.ts) bounds password guessing.
import type { Config } from '../config';
import { clientNetwork, limitKey, type Limiter, type RateLimits } from '../limits/rate-limits';

export function createRequestLimits(deps: { config: Config; rateLimits: RateLimits }) {
  const { limits } = deps.config;
  const make = deps.rateLimits.limiter;
  const pairOf = (name: string, perAddress: Limiter | null, global: Limiter | null) =>
    async function check(address: string): Promise<void> {
      await perAddress?.consume(
        limitKey(clientNetwork(address)),
        `Too many ${name} requests from this address`,
      );
      await global?.consume('all', `Too many ${name} requests; try again later`);
    };
  return {
    signup: pairOf(
      'signup',
      make('signup_address', limits.signup.address),
      make('signup_global', limits.signup.global),
    ),
    refresh: pairOf(
      'refresh',
      make('refresh_address', limits.refresh.address),
      make('refresh_global', limits.refresh.global),
    ),
  };
}

export type RequestLimits = ReturnType<typeof createRequestLimits>;
