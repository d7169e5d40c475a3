// The API's own documentation: the OpenAPI 3.1 document (built from the mounted route table), Swagger UI
// from swagger-ui-dist, and the order-lifecycle diagram drawn from the order machine.
import fs from 'node:fs';
import * as yup from 'yup';
import { NotFoundError } from '../lib/errors';
import { defineRoute, errorResponses, type RouteDef } from '../lib/http/route';
import { strictObject } from '../lib/http/validate';
import {
  buildOpenApiDocument,
  type OpenApiDocument,
  type RouteTableGroup,
} from '../lib/openapi/openapi-document';
import { swaggerAsset, swaggerUiHtml } from '../lib/openapi/swagger-ui';
import type { Services } from '../lib/services';

export const OPENAPI_PATH = '/openapi.json';
export const DOCS_ASSETS_PATH = '/docs/assets';

const OPENAPI_DOCUMENT_SCHEMA = {
  type: 'object',
  required: ['openapi', 'info', 'paths', 'components'],
  properties: {
    openapi: { const: '3.1.0' },
    info: {
      type: 'object',
      required: ['title', 'version'],
      properties: { title: { type: 'string' }, version: { type: 'string' } },
    },
    paths: { type: 'object' },
    components: { type: 'object' },
    tags: { type: 'array', items: { type: 'object' } },
  },
};

const HTML = { type: 'string', description: 'An HTML page' };

const API_DESCRIPTION = [
  'The marketplace REST API. Every error answers with the `Error` body below (API.md), every response carries',
  '`X-Request-Id`. An unknown path is 404 NOT_FOUND; a known path with another method (a plain OPTIONS included)',
  'is 405 METHOD_NOT_ALLOWED with `Allow`. Authorize with the `accessToken` of POST /api/v1/auth/login.',
  'The order lifecycle is drawn at [/docs/order-lifecycle](/docs/order-lifecycle).',
  'Text in a request body or query is taken in Unicode NFC (a letter and a combining accent become the one',
  'accented letter), so either spelling is stored, compared and searched as one; passwords are taken exactly as sent.',
].join(' ');

/** The document GET /api/v1/openapi.json serves (also built offline by `npm run lint:openapi`). */
export function buildServedDocument(groups: RouteTableGroup[]): OpenApiDocument {
  return buildOpenApiDocument(groups, {
    title: 'Marketplace API',
    version: packageVersion(),
    description: API_DESCRIPTION,
    license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
  });
}

function packageVersion(): string {
  const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/**
 * GET /api/v1/openapi.json. `table` returns the whole mounted route table (this route included); the document
 * is built on the first request, when every area's routes are in it, and kept (the table never changes).
 */
export function openApiRoutes(table: () => RouteTableGroup[]): RouteDef[] {
  let document: OpenApiDocument | null = null;
  return [
    defineRoute({
      method: 'get',
      path: OPENAPI_PATH,
      summary: 'This OpenAPI 3.1 document, generated from the route table and its yup schemas',
      tags: ['Documentation'],
      auth: 'public',
      ignoreBearer: true,
      responses: { 200: { description: 'The OpenAPI document', schema: OPENAPI_DOCUMENT_SCHEMA } },
      handler: (_input, ctx) => {
        document ??= buildServedDocument(table());
        ctx.set('Cache-Control', 'no-cache');
        ctx.body = document;
      },
    }),
  ];
}

/** The pages under /docs (mounted at the root, outside /api/v1). */
export function docsPageRoutes(services: Pick<Services, 'orderDiagram'>, apiPrefix: string): RouteDef[] {
  return [
    defineRoute({
      method: 'get',
      path: '/docs',
      summary: 'Swagger UI for this API (served from the swagger-ui-dist package)',
      tags: ['Documentation'],
      auth: 'public',
      ignoreBearer: true,
      responses: { 200: { description: 'Swagger UI', contentType: 'text/html', schema: HTML } },
      handler: (_input, ctx) => {
        ctx.type = 'text/html; charset=utf-8';
        ctx.body = swaggerUiHtml({
          specUrl: apiPrefix + OPENAPI_PATH,
          assetsPath: DOCS_ASSETS_PATH,
          title: 'Marketplace API documentation',
        });
      },
    }),
    defineRoute({
      method: 'get',
      path: `${DOCS_ASSETS_PATH}/:file`,
      summary: 'A static file of Swagger UI (swagger-ui.css, swagger-ui-bundle.js, favicons)',
      tags: ['Documentation'],
      auth: 'public',
      ignoreBearer: true,
      params: strictObject({
        file: yup.string().required().max(100).meta({
          description: 'swagger-ui.css, swagger-ui-bundle.js, favicon-16x16.png or favicon-32x32.png',
        }),
      }),
      responses: {
        200: {
          description: 'The file (text/css, application/javascript or image/png)',
          contentType: '*/*',
          schema: { type: 'string' },
        },
        ...errorResponses([404, 'Not one of the Swagger UI files (NOT_FOUND)']),
      },
      handler: ({ params }, ctx) => {
        const asset = swaggerAsset(params.file);
        if (!asset) throw new NotFoundError(`No documentation asset ${params.file}`);
        ctx.type = asset.contentType;
        ctx.length = asset.size;
        ctx.set('Cache-Control', 'public, max-age=3600');
        ctx.body = asset.stream;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/docs/order-lifecycle',
      summary: 'The order lifecycle drawn from the order machine, with a legend',
      tags: ['Documentation'],
      auth: 'public',
      ignoreBearer: true,
      responses: { 200: { description: 'The diagram page', contentType: 'text/html', schema: HTML } },
      handler: async (_input, ctx) => {
        ctx.type = 'text/html; charset=utf-8';
        ctx.body = await services.orderDiagram.diagramPage();
      },
    }),
  ];
}
