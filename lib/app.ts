// Builds the Koa application (never listens; lib/server.ts does). Middleware order matters:
// the response memo's recorder, request id + access log, request metrics, the one error handler, CORS
// (preflights end here, before auth), JSON body, the routes, then 404/405. The server listens with `handle`:
// the response memo in front of Koa (lib/http/response-memo.ts), and Koa's requests admitted a few per event-loop
// turn (lib/http/turns.ts).
import type http from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';
import { corsMiddleware } from './http/cors';
import { errorHandler } from './http/error-handler';
import { jsonBody } from './http/json-body';
import { requireHostHeader } from './http/host-header';
import { routeFallback } from './http/fallback';
import { requestIdAndAccessLog } from './http/request-id';
import { httpMetrics } from './http/http-metrics';
import { securityHeaders } from './http/security-headers';
import { mountRoutes } from './http/route';
import { createResponseMemo, type ResponseMemo } from './http/response-memo';
import { inTurns } from './http/turns';
import { createServices, type Deps, type Services } from './services';
import { routeTable, type RouteGroup } from '../routes/index';

export interface AppBundle {
  app: Koa;
  /** The request listener to serve: replays of cached GETs by the memo, everything else through `app`. */
  handle: http.RequestListener;
  responseMemo: ResponseMemo;
  router: Router;
  routes: RouteGroup[];
  services: Services;
}

export function createApp(deps: Deps): AppBundle {
  const services = createServices(deps);
  const routes = routeTable(services);
  const router = new Router();
  for (const group of routes)
    mountRoutes(router, group.prefix, group.routes, services.tokens, group.strictQuery ?? false);

  // Behind TRUST_PROXY_HOPS proxies ctx.ip is the client's (X-Forwarded-For); otherwise the socket's.
  const { trustProxy } = deps.config;
  const app = new Koa({ proxy: trustProxy.enabled, maxIpsCount: trustProxy.enabled ? trustProxy.hops : 0 });
  app.silent = true; // errors are handled and logged by errorHandler
  const responseMemo = createResponseMemo({ logger: deps.logger, observe: services.metrics.observeHttp });
  app.use(responseMemo.record);
  app.use(requestIdAndAccessLog(deps.logger));
  app.use(httpMetrics(services.metrics.observeHttp));
  app.use(securityHeaders());
  app.use(errorHandler(deps.logger));
  app.use(requireHostHeader());
  app.use(corsMiddleware(deps.config.corsOrigins));
  app.use(jsonBody());
  app.use(router.routes());
  app.use(routeFallback(router));
  const handle = responseMemo.listener(inTurns(app.callback(), deps.config.http.requestsPerTurn));
  return { app, handle, responseMemo, router, routes, services };
}
