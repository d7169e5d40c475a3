// Product routes. @koa/router tries routes in registration order, so /products/popular and
// /products/cursor come before /products/:productId (which also only accepts an integer id).
import { defineRoute, errorResponses, type RouteDef } from '../lib/http/route';
import { pageEnvelope } from '../lib/http/pagination';
import { cachingResponseHeaders, ifNoneMatchHeaders, sendCachedDocument } from '../lib/http/etag';
import {
  createProductBody,
  cursorPageShape,
  cursorProductsQuery,
  listProductsQuery,
  popularProductsQuery,
  productIdParams,
  productListShape,
  productPageShape,
  productShape,
  updateProductBody,
} from '../lib/products/product-schemas';
import { POPULAR_CACHE_TTL_SECONDS } from '../lib/products/product-service';
import type { ProductJson } from '../lib/products/product-json';
import type { PageSlice } from '../lib/query-helpers';
import type { Services } from '../lib/services';

const POPULAR_HEADERS = cachingResponseHeaders(
  `public, max-age=${POPULAR_CACHE_TTL_SECONDS}: the list may be up to ${POPULAR_CACHE_TTL_SECONDS / 60} minutes stale`,
);
const DETAIL_HEADERS = cachingResponseHeaders(
  'public, no-cache (stored, but revalidated on every use, so never stale after a write); private, no-store for a DRAFT seen by its seller or an admin',
);
// Only the public catalogue's pages are cached documents; a seller's or an admin's list carries neither header.
const LIST_HEADERS = cachingResponseHeaders(
  'public, no-cache (stored, but revalidated on every use, so never stale after a write); sent to anonymous callers and buyers only',
  false,
);
const notModified = (headers: ReturnType<typeof cachingResponseHeaders>) => ({
  description: 'Not modified (If-None-Match matched the ETag)',
  headers,
});

export function productRoutes(services: Pick<Services, 'products'>): RouteDef[] {
  return [
    defineRoute({
      method: 'get',
      path: '/products/popular',
      summary: 'ON_SALE products by salesCount desc, id desc (cached 10 min; ETag, 304 on If-None-Match)',
      tags: ['Products'],
      auth: 'public',
      query: popularProductsQuery,
      headers: ifNoneMatchHeaders,
      responses: {
        200: {
          description: 'Popular products (limit 1..50, default 10)',
          schema: productListShape,
          headers: POPULAR_HEADERS,
        },
        304: notModified(POPULAR_HEADERS),
        ...errorResponses(400),
      },
      handler: async ({ query }, ctx) => {
        sendCachedDocument(ctx, await services.products.popular(query.limit), {
          scope: 'public',
          maxAgeSeconds: POPULAR_CACHE_TTL_SECONDS,
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: '/products/cursor',
      summary:
        'Products by createdAt desc, id desc, paged by an opaque cursor (limit 1..100, default 20; same filters as the list)',
      tags: ['Products'],
      auth: 'public',
      query: cursorProductsQuery,
      responses: {
        200: { description: 'A cursor page', schema: cursorPageShape },
        ...errorResponses([400, 'VALIDATION_ERROR, INVALID_CURSOR']),
      },
      handler: async ({ query, auth }, ctx) => {
        ctx.body = await services.products.cursorList(auth, query);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/products',
      summary:
        'Search products: keyword (name, case-insensitive), categoryId, status, sellerId, minPrice/maxPrice (inclusive), page, size, sort',
      tags: ['Products'],
      auth: 'public',
      query: listProductsQuery,
      headers: ifNoneMatchHeaders,
      responses: {
        200: {
          description:
            'A page of products. The public catalogue’s pages (anonymous, buyers) are cached until the next product change and carry an ETag (304 on If-None-Match); a seller’s or an admin’s are not',
          schema: productPageShape,
          headers: LIST_HEADERS,
        },
        304: notModified(LIST_HEADERS),
        ...errorResponses(400),
      },
      handler: async ({ query, auth }, ctx) => {
        const envelope = (page: PageSlice<ProductJson>) => pageEnvelope(page, query);
        if (services.products.seesPublicOnly(auth)) {
          sendCachedDocument(ctx, await services.products.publicList(query, envelope), { scope: 'public' });
        } else {
          ctx.body = envelope(await services.products.list(auth, query));
        }
      },
    }),
    defineRoute({
      method: 'post',
      path: '/products',
      summary: 'Create a product (status DRAFT or ON_SALE; SOLD_OUT when stockQuantity is 0)',
      tags: ['Products'],
      auth: ['SELLER'],
      body: createProductBody,
      responses: {
        201: { description: 'The new product', schema: productShape },
        ...errorResponses(
          [400, 'VALIDATION_ERROR (also an unknown categoryId)'],
          403,
          [409, 'PRODUCT_QUOTA_EXCEEDED: the seller has SELLER_MAX_PRODUCTS live products'],
          413,
          415,
        ),
      },
      handler: async ({ body, auth }, ctx) => {
        ctx.status = 201;
        ctx.body = await services.products.create(auth, body);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/products/:productId',
      summary:
        'One product (cached in the service, always revalidated by HTTP caches; ETag, 304 on If-None-Match). DRAFT only for its seller and admins',
      tags: ['Products'],
      auth: 'public',
      params: productIdParams,
      headers: ifNoneMatchHeaders,
      responses: {
        200: { description: 'The product', schema: productShape, headers: DETAIL_HEADERS },
        304: notModified(DETAIL_HEADERS),
        ...errorResponses(400, [404, 'Unknown, deleted, or a DRAFT of someone else (NOT_FOUND)']),
      },
      handler: async ({ params, auth }, ctx) => {
        const { document, visibility } = await services.products.detail(params.productId, auth);
        // Shared caches may keep a public product but must revalidate (a cheap 304): after a client's own
        // write (an order, a PATCH) it must never get the old stock or price from a browser or CDN copy.
        // A DRAFT depends on who asks, so nobody stores it.
        sendCachedDocument(ctx, document, { scope: visibility === 'public' ? 'public' : 'private' });
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/products/:productId',
      summary:
        'Edit an own product; status only DRAFT <-> ON_SALE; stockQuantity 0 makes it SOLD_OUT, > 0 lifts that',
      tags: ['Products'],
      auth: ['SELLER'],
      params: productIdParams,
      body: updateProductBody,
      responses: {
        200: { description: 'The updated product', schema: productShape },
        ...errorResponses(
          400,
          [403, 'Not a seller, or another seller’s product (FORBIDDEN)'],
          [404, 'Unknown or deleted product'],
          413,
          415,
        ),
      },
      handler: async ({ params, body, auth }, ctx) => {
        ctx.body = await services.products.update(auth, params.productId, body);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/products/:productId',
      summary: 'Soft-delete an own product (404 everywhere afterwards; its images are removed)',
      tags: ['Products'],
      auth: ['SELLER'],
      params: productIdParams,
      responses: {
        204: { description: 'Deleted' },
        ...errorResponses(
          400,
          [403, 'Not a seller, or another seller’s product (FORBIDDEN)'],
          [404, 'Unknown or deleted product'],
        ),
      },
      handler: async ({ params, auth }, ctx) => {
        await services.products.remove(auth, params.productId);
        ctx.status = 204;
      },
    }),
  ];
}
