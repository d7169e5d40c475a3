// GET /health/live and /health/ready. Both ignore an Authorization header: checking a token reads the member
// from the database, so with the database down a probe that sends one would get 503 (or an Error body) instead
// of the liveness or the readiness report.
import { livenessShape, READINESS_DOWN_EXAMPLE, readinessShape } from '../lib/health/health-schemas';
import { DB_RETRY_AFTER_SECONDS } from '../lib/db-errors';
import { defineRoute, RETRY_AFTER, type RouteDef } from '../lib/http/route';
import type { Services } from '../lib/services';

export function healthRoutes(services: Pick<Services, 'health'>): RouteDef[] {
  return [
    defineRoute({
      method: 'get',
      path: '/health/live',
      summary: 'Liveness: the process is up',
      tags: ['Health'],
      auth: 'public',
      ignoreBearer: true,
      responses: {
        200: { description: 'Process is up', schema: livenessShape },
      },
      handler: (_input, ctx) => {
        ctx.body = { status: 'UP' };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/health/ready',
      summary: 'Readiness: database reachable and migrations applied',
      tags: ['Health'],
      auth: 'public',
      ignoreBearer: true,
      responses: {
        200: { description: 'Ready', schema: readinessShape },
        503: {
          description: 'Not ready (the checks say which part)',
          schema: readinessShape,
          example: READINESS_DOWN_EXAMPLE,
          headers: RETRY_AFTER,
        },
      },
      handler: async (_input, ctx) => {
        const report = await services.health.ready();
        ctx.status = report.status === 'UP' ? 200 : 503;
        // As every other 503: when to ask again (a database that is down is retried after as long).
        if (ctx.status === 503) ctx.set('Retry-After', String(DB_RETRY_AFTER_SECONDS));
        ctx.body = report;
      },
    }),
  ];
}
