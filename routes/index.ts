// The route table of the whole service: every route the app mounts, grouped by mount point.
// The OpenAPI document is generated from this same table.
import type { RouteDef } from '../lib/http/route';
import type { Services } from '../lib/services';
import { healthRoutes } from './health';
import { docsPageRoutes, openApiRoutes } from './docs';
import { categoryRoutes } from './categories';
import { productRoutes } from './products';
import { authRoutes } from './auth';
import { memberRoutes } from './members';
import { imageRoutes, uploadRoutes } from './images';
import { orderRoutes } from './orders';
import { notificationRoutes } from './notifications';

export interface RouteGroup {
  prefix: string;
  routes: RouteDef[];
}

export const API_PREFIX = '/api/v1';

export function routeTable(services: Services): RouteGroup[] {
  const groups: RouteGroup[] = [
    { prefix: '', routes: [...healthRoutes(services), ...uploadRoutes(services)] },
    {
      prefix: API_PREFIX,
      routes: [
        ...authRoutes(services),
        ...memberRoutes(services),
        ...categoryRoutes(services),
        ...productRoutes(services),
        ...imageRoutes(services),
        ...orderRoutes(services),
        ...notificationRoutes(services),
      ],
    },
    // Documentation last: the OpenAPI document describes every group above (and itself).
    { prefix: '', routes: docsPageRoutes(services, API_PREFIX) },
    { prefix: API_PREFIX, routes: openApiRoutes(() => groups) },
  ];
  return groups;
}
