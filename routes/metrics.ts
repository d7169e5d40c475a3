// GET /metrics: Prometheus' text format, at the root (not an API resource, like /health). Outside production
// anyone may scrape it; in production loopback clients or METRICS_TOKEN (the service decides).
import { defineRoute, errorResponses, type RouteDef } from '../lib/http/route';
import type { Services } from '../lib/services';

export function metricsRoutes(services: Pick<Services, 'metrics'>): RouteDef[] {
  return [
    defineRoute({
      method: 'get',
      path: '/metrics',
      summary: 'Prometheus metrics (text exposition format 0.0.4); see the README for each metric',
      tags: ['Health'],
      auth: 'public',
      // The Bearer token here is METRICS_TOKEN, not a member's JWT.
      ignoreBearer: true,
      responses: {
        200: {
          description: 'Every metric in Prometheus text format',
          contentType: 'text/plain',
          schema: { type: 'string' },
        },
        ...errorResponses([
          403,
          'Production only: neither a loopback client nor Bearer METRICS_TOKEN (FORBIDDEN)',
        ]),
      },
      handler: async (_input, ctx) => {
        const { contentType, text } = await services.metrics.scrape({
          ip: ctx.ip,
          authorization: ctx.get('Authorization'),
        });
        ctx.set('Cache-Control', 'no-store');
        ctx.type = contentType;
        ctx.body = text;
      },
    }),
  ];
}
