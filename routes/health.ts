import { defineRoute, type RouteDef } from '../lib/http/route';
import type { Services } from '../lib/services';

const readySchema = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['UP', 'DOWN'] },
    checks: {
      type: 'object',
      properties: {
        database: { type: 'string', enum: ['UP', 'DOWN'] },
        migrations: { type: 'string', enum: ['UP', 'PENDING', 'UNKNOWN'] },
      },
    },
  },
  required: ['status', 'checks'],
};

export function healthRoutes(services: Pick<Services, 'health'>): RouteDef[] {
  return [
    defineRoute({
      method: 'get',
      path: '/health/live',
      summary: 'Liveness: the process is up',
      tags: ['Health'],
      auth: 'public',
      responses: {
        200: {
          description: 'Process is up',
          schema: { type: 'object', properties: { status: { const: 'UP' } } },
        },
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
      responses: {
        200: { description: 'Ready', schema: readySchema },
        503: { description: 'Not ready', schema: readySchema },
      },
      handler: async (_input, ctx) => {
        const report = await services.health.ready();
        ctx.status = report.status === 'UP' ? 200 : 503;
        ctx.body = report;
      },
    }),
  ];
}
