// The route table of the whole service: every route the app mounts, grouped by mount point.
// The OpenAPI document is generated from this same table.
import type { RouteDef } from '../lib/http/route';
import type { Services } from '../lib/services';
import { healthRoutes } from './health';
import { metricsRoutes } from './metrics';
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
  /**
   * The API's groups: a query parameter a route does not declare is 400 VALIDATION_ERROR, as API.md's strict
   * schemas have it. Elsewhere (images, health, metrics, docs) a query string is ignored: `?v=2` on an image URL
   * busts a browser's cache, and a load balancer's probe may add its own.
   */
  strictQuery?: boolean;
}

export const API_PREFIX = '/api/v1';

/** Each route file receives only the services it declares. */
export function routeTable(services: Services): RouteGroup[] {
  const {
    health,
    metrics,
    auth,
    members,
    categories,
    products,
    images,
    orders,
    notifications,
    orderDiagram,
  } = services;
  const groups: RouteGroup[] = [
    {
      prefix: '',
      routes: [...healthRoutes({ health }), ...metricsRoutes({ metrics }), ...uploadRoutes({ images })],
    },
    {
      prefix: API_PREFIX,
      strictQuery: true,
      routes: [
        ...authRoutes({ auth }),
        ...memberRoutes({ members }),
        ...categoryRoutes({ categories }),
        ...productRoutes({ products }),
        ...imageRoutes({ images }),
        ...orderRoutes({ orders, orderDiagram }),
        ...notificationRoutes({ notifications }),
      ],
    },
    // Documentation last: the OpenAPI document describes every group above (and itself).
    { prefix: '', routes: docsPageRoutes({ orderDiagram }, API_PREFIX) },
    { prefix: API_PREFIX, strictQuery: true, routes: openApiRoutes(() => groups) },
  ];
  return groups;
}
