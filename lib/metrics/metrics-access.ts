// Who may scrape GET /metrics: anyone outside production (development, tests); in production a client on
// loopback (a sidecar or node agent) or one presenting METRICS_TOKEN as a Bearer token. The metrics name
// routes and volumes, nothing personal, but a public endpoint would still show an outsider the load.
import crypto from 'node:crypto';
import { ForbiddenError } from '../errors';

export interface MetricsCaller {
  /** The client address as the app sees it (behind TRUST_PROXY: the forwarded client). */
  ip: string;
  /** The Authorization header, '' when absent. */
  authorization: string;
}

export function isLoopback(ip: string): boolean {
  return ip === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(ip);
}

function sameToken(sent: string, expected: string): boolean {
  // Hashing first gives equal lengths, so the comparison's time says nothing about the token.
  const digest = (text: string) => crypto.createHash('sha256').update(text).digest();
  return crypto.timingSafeEqual(digest(sent), digest(expected));
}

export function createMetricsAccess(options: { production: boolean; token: string | null }) {
  return {
    /** Throws FORBIDDEN unless `caller` may read the metrics. */
    check(caller: MetricsCaller): void {
      if (!options.production || isLoopback(caller.ip)) return;
      const match = /^Bearer (.+)$/.exec(caller.authorization);
      if (options.token !== null && match && sameToken(match[1], options.token)) return;
      throw new ForbiddenError(
        'Metrics are served to loopback clients, or with the METRICS_TOKEN as a Bearer token',
      );
    },
  };
}
