// Route definitions as data: method, path, auth requirement, yup schemas and documented responses.
// Routes are mounted from this table, and the OpenAPI document is generated from the same table,
// so the documentation cannot drift from what the service enforces.
import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type * as yup from 'yup';
import type { TokenService } from '../auth/tokens';
import { UnsupportedMediaTypeError } from '../errors';
import { admitCaller, callerOf, type AuthRequirement, type CallerOf } from './authenticate';
import { errorShape } from './error-body';
import { staticPathGuard } from './fallback';
import { strictObject, validateInput, validateText } from './validate';

export type { AuthRequirement } from './authenticate';
export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';
/** A JSON Schema (OpenAPI 3.1 dialect) describing a response body. */
export type JsonSchema = Record<string, unknown>;

export interface ResponseDoc {
  description: string;
  /** The body: a response shape (yup; its named components are emitted once), or JSON Schema for non-JSON bodies. */
  schema?: yup.ISchema<unknown> | JsonSchema;
  contentType?: string;
  /**
   * Response headers worth documenting (e.g. ETag, Cache-Control); X-Request-Id is always there. `required`:
   * sent on every response of this status (the contract test holds the service to it).
   */
  headers?: Record<string, { description: string; required?: boolean; schema: JsonSchema }>;
  /** The body's example when not the schema's own (an error response's is built from its codes). */
  example?: unknown;
}

type AnyObjectSchema = yup.ObjectSchema<yup.AnyObject>;
type Out<S> = S extends yup.ISchema<infer T> ? T : undefined;

export interface RouteInput<P, Q, B, H, C> {
  params: P;
  query: Q;
  body: B;
  /** The request headers the route declares, under their canonical names (`Idempotency-Key`). */
  headers: H;
  /** The authenticated caller; null only on public routes without a token. */
  auth: C;
}

export interface RouteDef<
  PS extends AnyObjectSchema | undefined = AnyObjectSchema | undefined,
  QS extends AnyObjectSchema | undefined = AnyObjectSchema | undefined,
  BS extends AnyObjectSchema | undefined = AnyObjectSchema | undefined,
  HS extends AnyObjectSchema | undefined = AnyObjectSchema | undefined,
  A extends AuthRequirement = AuthRequirement,
> {
  method: HttpMethod;
  /** Path relative to the mount point, in @koa/router 15 syntax (`/products/:productId`). */
  path: string;
  summary: string;
  tags: string[];
  auth: A;
  params?: PS;
  query?: QS;
  /**
   * Request headers, keyed by their canonical names (`Idempotency-Key`): validated like params and query,
   * errors named `headers.<Name>`, and documented from the same schema. Headers it does not name are ignored.
   */
  headers?: HS;
  body?: BS;
  /** Request encodings other than JSON (documented; the handler's middleware parses them). */
  requestContentType?: 'multipart/form-data';
  /** JSON Schema of a non-JSON request body (e.g. the multipart fields), for the OpenAPI document. */
  requestSchema?: JsonSchema;
  /** OpenAPI `encoding` of a multipart body's fields (e.g. which file types a field takes). */
  requestEncoding?: Record<string, { contentType: string }>;
  responses: Record<number, ResponseDoc>;
  /**
   * Runs after authentication and the params/query validation, before `before` reads the body: e.g.
   * refusing a stranger's upload before its files are streamed to disk.
   */
  beforeBody?: (
    input: Pick<RouteInput<Out<PS>, Out<QS>, undefined, undefined, CallerOf<A>>, 'params' | 'query' | 'auth'>,
  ) => Promise<void>;
  /** Middleware run after `beforeBody` and before the body is validated (e.g. the multipart parser). */
  before?: Middleware[];
  /**
   * Public routes that never use the caller's identity (signup, login, refresh, logout, health, documentation):
   * any Authorization header is ignored, so a client that still sends its expired access token is not refused
   * its own refresh, and a probe's token never makes health depend on the member table.
   */
  ignoreBearer?: boolean;
  handler: (
    input: RouteInput<Out<PS>, Out<QS>, Out<BS>, Out<HS>, CallerOf<A>>,
    ctx: Context,
  ) => Promise<void> | void;
}

/** Identity helper that gives each route definition full type inference (schemas and the caller's type). */
export function defineRoute<
  PS extends AnyObjectSchema | undefined = undefined,
  QS extends AnyObjectSchema | undefined = undefined,
  BS extends AnyObjectSchema | undefined = undefined,
  HS extends AnyObjectSchema | undefined = undefined,
  A extends AuthRequirement = AuthRequirement,
>(def: RouteDef<PS, QS, BS, HS, A>): RouteDef {
  return def as unknown as RouteDef;
}

function hasBody(ctx: Context): boolean {
  return Number(ctx.get('Content-Length') || 0) > 0 || ctx.get('Transfer-Encoding') !== '';
}

/** The declared headers the client sent, under the schema's names (Node lowercases incoming names). */
function declaredHeaders(schema: AnyObjectSchema): (ctx: Context) => Record<string, unknown> {
  const names = Object.keys(schema.fields).map((name) => [name, name.toLowerCase()] as const);
  return (ctx) => {
    const out: Record<string, unknown> = {};
    const sent = ctx.req.headers;
    for (const [name, lower] of names) if (sent[lower] !== undefined) out[name] = sent[lower];
    return out;
  };
}

/** In a strict group (the API) a route that declares no query parameters takes none: any is an unknown field (400). */
const NO_QUERY = strictObject({});

type EarlyInput = Pick<RouteInput<unknown, unknown, unknown, unknown, unknown>, 'params' | 'query' | 'auth'>;

/**
 * Each route is one router middleware (two when it has `before` middleware): authentication, validation and
 * the handler run in one async function rather than a chain the router composes on every request.
 */
export function mountRoutes(
  router: Router,
  prefix: string,
  defs: RouteDef[],
  tokens: TokenService,
  strictQuery = false,
): void {
  for (const def of defs) {
    const headersOf = def.headers ? declaredHeaders(def.headers) : null;
    const path = prefix + def.path;
    const guard = path.includes('/:') ? staticPathGuard(router, path) : null;
    const early = async (ctx: Context): Promise<void> => {
      guard?.(ctx);
      await admitCaller(def.auth, tokens, ctx, def.ignoreBearer);
      if (def.body && !def.requestContentType && hasBody(ctx) && !ctx.is('application/json')) {
        throw new UnsupportedMediaTypeError('Content-Type must be application/json');
      }
      const input: EarlyInput = {
        params: def.params ? await validateText(def.params, ctx.params, 'params') : ctx.params,
        query: def.query
          ? await validateText(def.query, ctx.query, 'query')
          : strictQuery && ctx.querystring
            ? await validateText(NO_QUERY, ctx.query, 'query')
            : {},
        auth: callerOf(ctx),
      };
      if (def.beforeBody) await def.beforeBody(input as never);
      ctx.state.routeInput = input;
    };
    const run = async (ctx: Context): Promise<void> => {
      const rawBody = (ctx.request as { body?: unknown }).body ?? {};
      const body = def.body ? await validateInput(def.body, rawBody, 'body') : undefined;
      // After the body, as before headers were declared: a request wrong in both reports its body first.
      const headers =
        def.headers && headersOf ? await validateText(def.headers, headersOf(ctx), 'headers') : {};
      await def.handler({ ...(ctx.state.routeInput as EarlyInput), body, headers } as never, ctx);
    };
    if (def.before?.length) {
      router[def.method](
        path,
        async function prepareRoute(ctx, next) {
          await early(ctx);
          return next();
        },
        ...def.before,
        async function routeHandler(ctx) {
          await run(ctx);
        },
      );
    } else {
      router[def.method](path, async function route(ctx) {
        await early(ctx);
        await run(ctx);
      });
    }
  }
}

/**
 * The 503 every API operation may answer (its database unavailable or too slow), naming what else makes this
 * one answer it, e.g. `...errorResponses(400, unavailable('the password hasher is busy'))`.
 */
export function unavailable(...also: string[]): [503, string] {
  const causes = ['the database is unavailable or too slow', ...also].join(', or ');
  return [503, `SERVICE_UNAVAILABLE: ${causes}; retry after Retry-After seconds`];
}

/** A 503 cause of the routes that hash or check a password (lib/auth/password-hasher.ts). */
export const BUSY_HASHER = 'the password hasher is busy';

/** A 503 cause: a transaction's COMMIT lost on the way, its outcome not learned (lib/commit-outcome.ts). */
export const lostCommit = (what: string) =>
  `the connection was lost during COMMIT (read ${what} before retrying: the change may have been made)`;

/**
 * Descriptions of a bare status in errorResponses. 401 is not here: the document derives it from the route's
 * auth (a public route never answers UNAUTHENTICATED); 409 always names its codes.
 */
const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request (VALIDATION_ERROR)',
  403: 'Wrong role or not the owner (FORBIDDEN)',
  404: 'Not found (NOT_FOUND)',
  413: 'JSON body over 1 MB (PAYLOAD_TOO_LARGE)',
  415: 'Content-Type is not application/json (UNSUPPORTED_MEDIA_TYPE)',
  429: 'Too many requests (TOO_MANY_REQUESTS)',
  503: unavailable()[1],
};

/** The Retry-After response header of a 429 or 503, as the OpenAPI document describes it. */
export const RETRY_AFTER = {
  'Retry-After': {
    description: 'Seconds to wait before trying again',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
};

/**
 * Documented error responses, e.g. `...errorResponses(400, 403, [409, 'DUPLICATE_CATEGORY'])`: a description
 * may be given, and headers some of the status's answers carry (429 and 503 always carry Retry-After).
 */
export function errorResponses(
  ...statuses: Array<number | [number, string] | [number, string, ResponseDoc['headers']]>
): Record<number, ResponseDoc> {
  const out: Record<number, ResponseDoc> = {};
  for (const entry of statuses) {
    const [status, description, headers] = Array.isArray(entry)
      ? entry
      : [entry, ERROR_DESCRIPTIONS[entry], undefined];
    if (!description)
      throw new Error(`errorResponses: status ${status} needs a description naming its codes`);
    // One description per status: a second one would silently replace the first in the served document.
    if (out[status]) throw new Error(`errorResponses: status ${status} is listed twice`);
    out[status] = { description, schema: errorShape };
    if (status === 429 || status === 503) out[status].headers = RETRY_AFTER;
    if (headers) out[status].headers = { ...out[status].headers, ...headers };
  }
  return out;
}
