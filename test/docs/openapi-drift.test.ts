// Drift: every route the app actually mounts (walked from the @koa/router stack, not from the table) is in the
// served OpenAPI document, every documented operation is mounted, and each operation's auth is reflected.
import test from 'ava';
import Router from '@koa/router';
import {
  CommitOutcomeUnknownError,
  ConflictError,
  ERROR_CODES,
  IdempotencyKeyInProgressError,
  NotFoundError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  TooManyRequestsError,
  UnauthenticatedError,
  ValidationError,
  type AppError,
  type ErrorCode,
} from '../../lib/errors';
import { statusOfCode } from '../../lib/http/error-body';
import { buildOpenApiDocument, TAGS, type OpenApiDocument } from '../../lib/openapi/openapi-document';
import { expandOptionalGroups, toOpenApiPath } from '../../lib/openapi/openapi-paths';
import { ComponentRegistry, yupToJsonSchema } from '../../lib/openapi/yup-json-schema';
import { errorResponses, mountRoutes, type JsonSchema, type RouteDef } from '../../lib/http/route';
import { createContract } from '../helpers/contract';
import { startTestApp, type TestApp } from '../helpers/harness';

let app: TestApp;
let doc: OpenApiDocument;
test.before(async () => {
  app = await startTestApp();
  const res = await app.request('GET', '/api/v1/openapi.json');
  if (res.status !== 200) throw new Error(`openapi.json answered ${res.status}`);
  doc = res.body;
});
test.after.always(async () => {
  await app?.close();
});

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** `METHOD /path` of every mounted route (HEAD is koa-router's automatic twin of GET). */
function mountedOperations(router: Router = app.bundle.router): string[] {
  const out: string[] = [];
  for (const layer of router.stack) {
    const methods = layer.methods.map((m) => m.toLowerCase()).filter((m) => m !== 'head');
    for (const method of methods) {
      // A RegExp route cannot be described by an OpenAPI path: report it as it is, so the check fails.
      if (typeof layer.path !== 'string') {
        out.push(`${method} ${String(layer.path)}`);
        continue;
      }
      for (const concrete of expandOptionalGroups(layer.path)) out.push(`${method} ${toOpenApiPath(concrete)}`);
    }
  }
  return out;
}

function undocumented(router: Router): string[] {
  const documented = new Set(documentedOperations());
  return mountedOperations(router).filter((op) => !documented.has(op));
}

function documentedOperations(): string[] {
  const out: string[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item)) if (HTTP_METHODS.includes(method)) out.push(`${method} ${path}`);
  }
  return out;
}

test('every mounted route is documented in /api/v1/openapi.json', (t) => {
  const mounted = mountedOperations();
  t.true(mounted.length >= 6, `the router has routes (${mounted.length})`);
  const missing = undocumented(app.bundle.router);
  t.deepEqual(missing, [], `undocumented routes: ${missing.join(', ')}`);
});

test('the drift check flags a route mounted outside the table', (t) => {
  const router = new Router();
  for (const group of app.bundle.routes)
    mountRoutes(router, group.prefix, group.routes, app.bundle.services.tokens, group.strictQuery ?? false);
  t.deepEqual(undocumented(router), []);
  router.post('/api/v1/secret/:thing', (ctx) => {
    ctx.body = 'not in the table';
  });
  t.deepEqual(undocumented(router), ['post /api/v1/secret/{thing}']);
});

test('every documented operation is mounted (no stale entries)', (t) => {
  const mounted = new Set(mountedOperations());
  const stale = documentedOperations().filter((op) => !mounted.has(op));
  t.deepEqual(stale, []);
});

test('the served document is the one built from the mounted route table, and documents itself', (t) => {
  const rebuilt = buildOpenApiDocument(app.bundle.routes, doc.info);
  t.deepEqual(JSON.parse(JSON.stringify(rebuilt)), doc);
  t.is(doc.openapi, '3.1.0');
  t.truthy(doc.paths['/api/v1/openapi.json']?.get);
  t.truthy(doc.paths['/docs']?.get);
  t.truthy(doc.paths['/docs/order-lifecycle']?.get);
  t.truthy(doc.paths['/health/live']?.get);
});

test('auth is reflected on every operation: bearer security, 401, and 403 for role-restricted routes', (t) => {
  t.deepEqual(doc.components.securitySchemes, {
    bearerAuth: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: 'The accessToken from POST /api/v1/auth/login or /api/v1/auth/refresh',
    },
  });
  const tableAuth = new Map<string, RouteDef>();
  for (const group of app.bundle.routes) {
    for (const def of group.routes) {
      for (const p of expandOptionalGroups(group.prefix + def.path)) tableAuth.set(`${def.method} ${toOpenApiPath(p)}`, def);
    }
  }
  let ignoring = 0;
  let optional = 0;
  let restricted = 0;
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const where = `${method} ${path}`;
      const def = tableAuth.get(where)!;
      const auth = def.auth;
      t.deepEqual(op['x-auth'], auth, where);
      t.truthy(op.responses['500'], `${where} documents 500`);
      t.regex(op.responses['4XX']?.description ?? '', /431 REQUEST_HEADERS_TOO_LARGE/, `${where} documents 4XX`);
      if (def.ignoreBearer && auth === 'public') {
        ignoring++;
        t.deepEqual(op.security, [], `${where} ignores the Authorization header`);
      } else if (auth === 'public') {
        // The token is optional: none, or a valid one (it may change the answer); an invalid one is 401.
        optional++;
        t.truthy(op.responses['401'], `${where} documents 401`);
        t.deepEqual(op.security, [{}, { bearerAuth: [] }], `${where} takes a token optionally`);
      } else {
        t.truthy(op.responses['401'], `${where} documents 401`);
        t.deepEqual(op.security, [{ bearerAuth: [] }], where);
      }
      if (Array.isArray(auth)) {
        restricted++;
        t.truthy(op.responses['403'], `${where} documents 403`);
        t.regex(op.description ?? '', new RegExp(`role ${auth.join(' or ')}`));
      }
    }
  }
  t.true(restricted > 0, 'some routes are role-restricted');
  t.true(ignoring > 0, 'the auth routes that ignore a stale token are documented without security');
  t.true(optional > 0, 'some public routes read a token when one is sent');
  // The public reads a seller's token changes (its own DRAFTs) offer the token; health and docs do not.
  for (const path of ['/api/v1/products', '/api/v1/products/{productId}', '/api/v1/products/cursor']) {
    t.deepEqual(doc.paths[path].get.security, [{}, { bearerAuth: [] }], path);
  }
  for (const path of ['/health/live', '/health/ready', '/api/v1/openapi.json', '/docs', '/api/v1/auth/login']) {
    const op = doc.paths[path].get ?? doc.paths[path].post;
    t.deepEqual(op?.security, [], path);
  }
});

test('error responses share the Error component, which is the error body the handler writes', async (t) => {
  const schemas = doc.components.schemas as Record<string, JsonSchema>;
  const error = schemas.Error as { properties: Record<string, JsonSchema> };
  t.deepEqual(error.properties.code, { type: 'string', enum: [...ERROR_CODES] });
  const op = doc.paths['/api/v1/categories'].get;
  t.like(op.responses['401'].content, { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } });
  const res = await app.request('GET', '/api/v1/categories', { token: 'not-a-jwt' });
  t.is(res.status, 401);
  t.deepEqual(createContract(doc).problems('GET', '/api/v1/categories', res), []);
  // A body the document does not allow is caught: a code outside the enum.
  t.notDeepEqual(createContract(doc).problems('GET', '/api/v1/categories', { ...res, body: { ...res.body, code: 'OOPS' } }), []);
});

test('every shape is a named component, referenced by $ref; tags come in a newcomer\'s order', (t) => {
  const names = Object.keys(doc.components.schemas);
  for (const name of ['Product', 'ProductPage', 'CursorPage', 'Order', 'OrderItem', 'Member', 'Category', 'Notification', 'OrderCreated', 'OrderStatusChanged', 'TokenPair', 'Image', 'Error']) {
    t.true(names.includes(name), name);
  }
  t.deepEqual(doc.paths['/api/v1/products/{productId}'].get.responses['200'].content?.['application/json'].schema, { $ref: '#/components/schemas/Product' });
  t.deepEqual(doc.paths['/api/v1/products'].get.responses['200'].content?.['application/json'].schema, { $ref: '#/components/schemas/ProductPage' });
  t.like(doc.components.schemas.Notification, { discriminator: { propertyName: 'type' } });
  // No endpoint marks a notification read: readAt says it is always null.
  for (const name of ['OrderCreatedNotification', 'OrderStatusChangedNotification']) {
    const readAt = (doc.components.schemas[name] as { properties: Record<string, JsonSchema> }).properties.readAt;
    t.like(readAt, { type: ['string', 'null'], format: 'date-time' });
    t.regex(String(readAt.description), /^Always null/, name);
  }
  t.deepEqual(doc.tags.map((tag) => tag.name), TAGS.map((tag) => tag.name));
  t.is(doc.tags[0].name, 'Auth');
  t.true(doc.tags.every((tag) => tag.description.length > 0));
  t.deepEqual(doc.servers, [{ url: '/', description: 'The service that serves this document' }]);
  // Money is not `multipleOf: 0.01` (stock validators refuse 19.99 under it).
  t.false(JSON.stringify(doc).includes('multipleOf'));
  // Signup cannot answer 401 (it ignores the Authorization header); a seller moves an order only forward.
  t.falsy(doc.paths['/api/v1/auth/signup'].post.responses['401']);
  const statusBody = doc.paths['/api/v1/sellers/orders/{orderId}/status'].patch.requestBody?.content['application/json'].schema as { properties: { status: JsonSchema } };
  t.deepEqual(statusBody.properties.status.enum, ['CONFIRMED', 'SHIPPED', 'DELIVERED']);
  // What other values answer (test/orders/order-rules.ts): PENDING or CANCELLED 409, a non-status 400.
  const statusText = String(statusBody.properties.status.description);
  t.regex(statusText, /PENDING or CANCELLED, is 409 INVALID_STATUS_TRANSITION/);
  t.regex(statusText, /any other value .* is 400 VALIDATION_ERROR/);
});

test('object fields of response shapes are required (the service always sends them)', (t) => {
  const schemas = doc.components.schemas as Record<string, JsonSchema>;
  const isObject = (schema: JsonSchema): boolean =>
    schema.type === 'object' ||
    (typeof schema.$ref === 'string' && schemas[schema.$ref.split('/').pop()!]?.type === 'object');
  const optional: string[] = [];
  const visit = (where: string, schema: JsonSchema) => {
    const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
    const required = (schema.required ?? []) as string[];
    for (const [name, property] of Object.entries(properties)) {
      if (isObject(property) && !required.includes(name)) optional.push(`${where}.${name}`);
      visit(`${where}.${name}`, property);
    }
  };
  for (const [name, schema] of Object.entries(schemas)) visit(name, schema);
  t.deepEqual(optional, []);
  // The four the review found: yup objects are optional unless `.defined()`.
  t.true((schemas.Order.required as string[]).includes('shippingAddress'));
  t.true((schemas.OrderCreatedNotification.required as string[]).includes('payload'));
  t.true((schemas.OrderStatusChangedNotification.required as string[]).includes('payload'));
  t.deepEqual(schemas.Readiness.required, ['status', 'checks']);
});

test('every parameter is described and every request body has an example', (t) => {
  let bodies = 0;
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      for (const p of op.parameters ?? []) t.true(p.description.length > 0, `${method} ${path} ${p.name}`);
      const json = op.requestBody?.content['application/json'];
      if (json && path !== '/api/v1/orders/{orderId}/cancel') {
        bodies++;
        t.not(json.example, undefined, `${method} ${path} has a request example`);
      }
    }
  }
  t.true(bodies >= 10, String(bodies));
});

test('path parameters, query parameters and request bodies come from the route table\'s yup schemas', (t) => {
  let bodies = 0;
  let queries = 0;
  for (const group of app.bundle.routes) {
    for (const def of group.routes) {
      for (const concrete of expandOptionalGroups(group.prefix + def.path)) {
        const path = toOpenApiPath(concrete);
        const op = doc.paths[path][def.method];
        const where = `${def.method} ${path}`;
        // Every {param} of the path is a required path parameter.
        const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
        const pathParams = (op.parameters ?? []).filter((p) => p.in === 'path');
        t.deepEqual(
          pathParams.map((p) => p.name),
          names,
          where,
        );
        for (const p of pathParams) t.true(p.required, where);
        if (def.body) {
          bodies++;
          const content = op.requestBody?.content[def.requestContentType ?? 'application/json'];
          const { description: _d, examples: _e, ...schema } = yupToJsonSchema(def.body, new ComponentRegistry());
          t.deepEqual(content?.schema, schema, where);
          if (!def.requestContentType) t.truthy(op.responses['415'], `${where} documents 415`);
        }
        if (def.requestSchema) {
          bodies++;
          const content = op.requestBody?.content[def.requestContentType ?? 'application/json'];
          t.deepEqual(content?.schema, def.requestSchema, `${where} documents its ${def.requestContentType} body`);
        }
        if (def.query) {
          queries++;
          const fields = yupToJsonSchema(def.query).properties as Record<string, JsonSchema>;
          const queryParams = (op.parameters ?? []).filter((p) => p.in === 'query');
          t.deepEqual(
            queryParams.map((p) => [p.name, { ...p.schema, description: p.description }]),
            Object.entries(fields).map(([name, { examples: _e, ...schema }]) => [name, schema]),
            where,
          );
        }
        if (def.params || def.query || def.body) t.truthy(op.responses['400'], `${where} documents 400`);
      }
    }
  }
  t.true(bodies > 0 && queries > 0, `bodies ${bodies}, queries ${queries}`);
  const asset = doc.paths['/docs/assets/{file}'].get;
  t.like(asset.parameters?.[0], {
    name: 'file',
    in: 'path',
    required: true,
    schema: { type: 'string', minLength: 1, maxLength: 100 },
  });
});

test('the document is well-formed: unique operationIds, every $ref resolves, every response names its headers', (t) => {
  const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
  t.is(new Set(ids).size, ids.length, 'operationIds are unique');
  const refs: string[] = [];
  const collect = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(collect);
    else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === '$ref' && typeof value === 'string') refs.push(value);
        else collect(value);
      }
    }
  };
  collect(doc);
  t.true(refs.length > 0);
  for (const ref of new Set(refs)) {
    t.true(ref.startsWith('#/'), ref);
    let node: unknown = doc;
    for (const part of ref.slice(2).split('/')) node = (node as Record<string, unknown> | undefined)?.[part];
    t.truthy(node, `${ref} resolves`);
  }
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      for (const [status, response] of Object.entries(op.responses)) {
        const { 'X-Request-Id': requestId, ...others } = response.headers as Record<string, any>;
        t.deepEqual(requestId, { $ref: '#/components/headers/XRequestId' }, `${method} ${path} ${status}`);
        // Route-specific headers (ETag, Cache-Control of the cached GETs) each carry a description and a schema.
        for (const [name, header] of Object.entries(others) as Array<[string, any]>) {
          t.is(typeof header.description, 'string', `${method} ${path} ${status} ${name}`);
          t.is(typeof header.schema?.type, 'string', `${method} ${path} ${status} ${name}`);
        }
      }
    }
  }
});

test("POST /orders documents each of its 503 codes in its one 503 response; a status listed twice is refused", (t) => {
  const responses = doc.paths['/api/v1/orders'].post!.responses as Record<string, { description: string }>;
  t.regex(responses['503'].description, /SERVICE_UNAVAILABLE/);
  t.regex(responses['503'].description, /COMMIT_OUTCOME_UNKNOWN/);
  t.regex(responses['409'].description, /IDEMPOTENCY_KEY_IN_PROGRESS/);
  // Only IDEMPOTENCY_KEY_IN_PROGRESS carries Retry-After among the 409s: declared, not required.
  const conflict = doc.paths['/api/v1/orders'].post!.responses['409'].headers as Record<string, any>;
  t.like(conflict['Retry-After'], { required: false, schema: { type: 'integer', minimum: 1 } });
  t.regex(conflict['Retry-After'].description, /IDEMPOTENCY_KEY_IN_PROGRESS/);
  t.falsy((doc.paths['/api/v1/orders/{orderId}/cancel'].post!.responses['409'].headers as Record<string, any>)['Retry-After']);
  t.notRegex(responses['503'].description, /Idempotency-Key is still running/);
  // The second description of a status would silently replace the first in the served document.
  t.throws(() => errorResponses([503, 'one'], 415, [503, 'another']), {
    message: 'errorResponses: status 503 is listed twice',
  });
});

test('401 and 503 descriptions say what each operation can answer', (t) => {
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const where = `${method} ${path}`;
      const unauthorized = op.responses['401']?.description ?? '';
      // Only login checks credentials; a public operation is never UNAUTHENTICATED (a token is optional).
      if (where !== 'post /api/v1/auth/login') t.notRegex(unauthorized, /INVALID_CREDENTIALS/, where);
      if (op['x-auth'] === 'public') t.notRegex(unauthorized, /UNAUTHENTICATED/, where);
      else t.regex(unauthorized, /UNAUTHENTICATED/, where);
      const unavailable = op.responses['503']?.description ?? '';
      const hashes = ['post /api/v1/auth/signup', 'post /api/v1/auth/login', 'patch /api/v1/members/me'];
      t.is(/password hasher is busy/.test(unavailable), hashes.includes(where), `${where}: ${unavailable}`);
      const lostCommit = [
        'post /api/v1/orders/{orderId}/cancel',
        'patch /api/v1/sellers/orders/{orderId}/status',
        'post /api/v1/products/{productId}/images',
      ];
      t.is(/lost during COMMIT \(read .+ before retrying/.test(unavailable), lostCommit.includes(where), where);
    }
  }
  // A bare 401 would hide the route's own auth; a bare 409 would name no code.
  t.throws(() => errorResponses(401), { message: /status 401 needs a description/ });
  t.throws(() => errorResponses(409), { message: /status 409 needs a description/ });
});

test('each error response has an example of its own status and of a code it names; examples match their schemas', (t) => {
  const contract = createContract(doc);
  let errors = 0;
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      for (const [status, response] of Object.entries(op.responses)) {
        const media = response.content?.['application/json'];
        if (!media) continue;
        const where = `${method} ${path} ${status}`;
        if (/^[45]/.test(status)) t.not(media.example, undefined, `${where} has an example`);
        if (media.example === undefined) continue;
        if (!status.endsWith('XX')) {
          // The example is a body the document allows for this status (ajv, as every test response).
          const headers = new Headers({ 'content-type': 'application/json' });
          for (const name of Object.keys(response.headers)) headers.set(name, '1');
          const res = { status: Number(status), headers, body: media.example, text: JSON.stringify(media.example) };
          t.deepEqual(contract.problems(method, path.replace(/\{\w+\}/g, '1'), res), [], where);
        }
        if (media.schema.$ref !== '#/components/schemas/Error') continue;
        errors++;
        const example = media.example as { status: number; code: ErrorCode; path: string };
        const sameStatus = status.endsWith('XX') ? String(example.status)[0] === status[0] : String(example.status) === status;
        t.true(sameStatus, `${where}: example status ${example.status}`);
        t.is(statusOfCode(example.code), example.status, `${where}: ${example.code}`);
        // A code the response names, or its status's only code.
        const codesOfStatus = ERROR_CODES.filter((code) => statusOfCode(code) === example.status);
        t.true(response.description.includes(example.code) || codesOfStatus.length === 1, `${where}: ${example.code}`);
      }
    }
  }
  t.true(errors > 100, String(errors));
  const example = (path: string, method: string, status: string) =>
    doc.paths[path][method].responses[status].content?.['application/json'].example;
  t.deepEqual(example('/health/ready', 'get', '503'), { status: 'DOWN', checks: { database: 'DOWN', migrations: 'UNKNOWN' } });
  t.like(example('/api/v1/orders', 'post', '409'), { status: 409, code: 'INSUFFICIENT_STOCK', path: '/api/v1/orders' });
  t.like(example('/api/v1/products/{productId}', 'get', '404'), { status: 404, code: 'NOT_FOUND', path: '/api/v1/products/1' });
  t.like(example('/api/v1/products', 'get', '401'), { status: 401, code: 'INVALID_TOKEN' });
  t.like(example('/api/v1/auth/login', 'post', '401'), { status: 401, code: 'INVALID_CREDENTIALS' });
  // The statuses the examples give each code are the ones the service answers them with.
  const thrown: AppError[] = [
    new ValidationError('x'),
    new UnauthenticatedError('TOKEN_EXPIRED', 'x'),
    new NotFoundError(),
    new ConflictError('INSUFFICIENT_STOCK', 'x'),
    new IdempotencyKeyInProgressError(1),
    new PayloadTooLargeError('FILE_TOO_LARGE', 'x'),
    new TooManyRequestsError('x', 1),
    new ServiceUnavailableError(),
    new CommitOutcomeUnknownError(1),
  ];
  for (const error of thrown) t.is(statusOfCode(error.code), error.status, error.code);
});
