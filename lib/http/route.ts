// Route definitions as data: method, path, auth requirement, yup schemas and documented responses.
// Routes are mounted from this table, and the OpenAPI document is generated from the same table,
// so the documentation cannot drift from what the service enforces.
import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type * as yup from 'yup';
import type { Role } from '../config';
import type { AuthMember, TokenService } from '../auth/tokens';
import { ForbiddenError, UnsupportedMediaTypeError, UnauthenticatedError } from '../errors';
import { errorShape } from './error-body';
import { validate } from './validate';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';
export type AuthRequirement = 'public' | 'any' | Role[];
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
}

type AnyObjectSchema = yup.ObjectSchema<yup.AnyObject>;
type Out<S> = S extends yup.ISchema<infer T> ? T : undefined;

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** The authenticated caller; null only on public routes without a token. */
  auth: AuthMember | null;
}

export interface RouteDef<
  PS extends AnyObjectSchema | undefined = AnyObjectSchema | undefined,
  QS extends AnyObjectSchema | undefined = AnyObjectSchema | undefined,
  BS extends AnyObjectSchema | undefined = AnyObjectSchema | undefined,
> {
  method: HttpMethod;
  /** Path relative to the mount point, in @koa/router 15 syntax (`/products/:productId`). */
  path: string;
  summary: string;
  tags: string[];
  auth: AuthRequirement;
  params?: PS;
  query?: QS;
  body?: BS;
  /** Request encodings other than JSON (documented; the handler's middleware parses them). */
  requestContentType?: 'multipart/form-data';
  /** JSON Schema of a non-JSON request body (e.g. the multipart fields), for the OpenAPI document. */
  requestSchema?: JsonSchema;
  /** OpenAPI `encoding` of a multipart body's fields (e.g. which file types a field takes). */
  requestEncoding?: Record<string, { contentType: string }>;
  /** Extra request headers worth documenting (e.g. Idempotency-Key). */
  headers?: Array<{
    name: string;
    description: string;
    required?: boolean;
    schema?: JsonSchema;
    example?: unknown;
  }>;
  responses: Record<number, ResponseDoc>;
  /** Middleware run after authentication and before validation (e.g. the multipart parser). */
  before?: Middleware[];
  /**
   * Public routes that never use the caller's identity (signup, login, refresh, logout): any Authorization
   * header is ignored, so a client that still sends its expired access token is not refused its own refresh.
   */
  ignoreBearer?: boolean;
  handler: (input: RouteInput<Out<PS>, Out<QS>, Out<BS>>, ctx: Context) => Promise<void> | void;
}

/** Identity helper that gives each route definition full type inference. */
export function defineRoute<
  PS extends AnyObjectSchema | undefined = undefined,
  QS extends AnyObjectSchema | undefined = undefined,
  BS extends AnyObjectSchema | undefined = undefined,
>(def: RouteDef<PS, QS, BS>): RouteDef {
  return def as unknown as RouteDef;
}

export function bearerToken(ctx: Context): string | null {
  const header = ctx.get('Authorization');
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match)
    throw new UnauthenticatedError('INVALID_TOKEN', 'Authorization header must be "Bearer <token>"');
  return match[1];
}

function hasBody(ctx: Context): boolean {
  return Number(ctx.get('Content-Length') || 0) > 0 || ctx.get('Transfer-Encoding') !== '';
}

function authenticate(def: RouteDef, tokens: TokenService): Middleware {
  return async function authenticateMiddleware(ctx, next) {
    if (def.ignoreBearer && def.auth === 'public') {
      ctx.state.auth = null;
      return next();
    }
    const token = bearerToken(ctx);
    if (!token) {
      if (def.auth !== 'public')
        throw new UnauthenticatedError('UNAUTHENTICATED', 'Authentication is required');
      ctx.state.auth = null;
      return next();
    }
    const auth = tokens.verifyAccessToken(token);
    if (Array.isArray(def.auth) && !def.auth.includes(auth.role)) {
      throw new ForbiddenError(`This operation requires the role ${def.auth.join(' or ')}`);
    }
    ctx.state.auth = auth;
    return next();
  };
}

export function mountRoutes(router: Router, prefix: string, defs: RouteDef[], tokens: TokenService): void {
  for (const def of defs) {
    const run: Middleware = async function routeHandler(ctx) {
      if (def.body && !def.requestContentType && hasBody(ctx) && !ctx.is('application/json')) {
        throw new UnsupportedMediaTypeError('Content-Type must be application/json');
      }
      const params = def.params ? await validate(def.params, ctx.params, 'params') : ctx.params;
      const query = def.query ? await validate(def.query, ctx.query, 'query') : {};
      const rawBody = (ctx.request as { body?: unknown }).body ?? {};
      const body = def.body ? await validate(def.body, rawBody, 'body') : undefined;
      await def.handler({ params, query, body, auth: ctx.state.auth ?? null } as never, ctx);
    };
    router[def.method](prefix + def.path, authenticate(def, tokens), ...(def.before ?? []), run);
  }
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request (VALIDATION_ERROR and the other 400 codes of API.md)',
  401: 'Not authenticated (UNAUTHENTICATED, INVALID_TOKEN, TOKEN_EXPIRED, INVALID_CREDENTIALS)',
  403: 'Wrong role or not the owner (FORBIDDEN)',
  404: 'Not found (NOT_FOUND)',
  409: 'Conflicts with the current state',
  413: 'Payload too large',
  415: 'Unsupported media type',
  429: 'Too many requests (TOO_MANY_REQUESTS)',
  503: 'Busy for a moment (SERVICE_UNAVAILABLE); retry after Retry-After seconds',
};

const RETRY_AFTER = {
  'Retry-After': {
    description: 'Seconds to wait before trying again',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
};

/** Documented error responses, e.g. `...errorResponses(400, 401, 409)`; descriptions may be overridden. */
export function errorResponses(...statuses: Array<number | [number, string]>): Record<number, ResponseDoc> {
  const out: Record<number, ResponseDoc> = {};
  for (const entry of statuses) {
    const [status, description] = Array.isArray(entry)
      ? entry
      : [entry, ERROR_DESCRIPTIONS[entry] ?? 'Error'];
    out[status] = { description, schema: errorShape };
    if (status === 429 || status === 503) out[status].headers = RETRY_AFTER;
  }
  return out;
}
