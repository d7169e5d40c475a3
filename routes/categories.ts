// GET /categories (public, cached, ETag) and the admin's POST /admin/categories.
import { defineRoute, errorResponses, type RouteDef } from '../lib/http/route';
import { cachingResponseHeaders, ifNoneMatchHeaders, sendCachedDocument } from '../lib/http/etag';
import { categoryListShape, categoryShape, createCategoryBody } from '../lib/categories/category-schemas';
import type { Services } from '../lib/services';

const LIST_HEADERS = cachingResponseHeaders(
  'public, no-cache: stored, but revalidated on every use, so a new category shows at once',
);

export function categoryRoutes(services: Pick<Services, 'categories'>): RouteDef[] {
  return [
    defineRoute({
      method: 'get',
      path: '/categories',
      summary:
        'Every category, ordered by displayOrder then id (cached 1 h in the service, always revalidated by HTTP caches; ETag, 304 on If-None-Match)',
      tags: ['Categories'],
      auth: 'public',
      headers: ifNoneMatchHeaders,
      responses: {
        200: { description: 'All categories', schema: categoryListShape, headers: LIST_HEADERS },
        304: { description: 'Not modified (If-None-Match matched the ETag)', headers: LIST_HEADERS },
      },
      handler: async (_input, ctx) => {
        sendCachedDocument(ctx, await services.categories.list(), { scope: 'public' });
      },
    }),
    defineRoute({
      method: 'post',
      path: '/admin/categories',
      summary: 'Create a category (name unique under its parent, ignoring case and Unicode normalization)',
      tags: ['Categories'],
      auth: ['ADMIN'],
      body: createCategoryBody,
      responses: {
        201: { description: 'The new category', schema: categoryShape },
        ...errorResponses(
          [400, 'VALIDATION_ERROR (also an unknown parentId)'],
          403,
          [409, 'DUPLICATE_CATEGORY'],
          413,
          415,
        ),
      },
      handler: async ({ body }, ctx) => {
        ctx.status = 201;
        ctx.body = await services.categories.create(body);
      },
    }),
  ];
}
