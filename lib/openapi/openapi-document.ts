// Builds the OpenAPI 3.1 document from the route table the app mounts (the same RouteDefs, yup request schemas
// and yup response shapes), so the document cannot drift from what the service enforces. Every shape whose yup
// schema names a component is emitted once under #/components/schemas and referenced by `$ref`. Errors the
// pipeline itself produces (401/403 from `auth`, 400 from validation, 415/413 for JSON bodies, 500, and the HTTP
// layer's refusals as `4XX`) are added to every operation that can produce them, with API.md's error body as the
// shared `Error` component.
import * as yup from 'yup';
import type { JsonSchema, ResponseDoc, RouteDef } from '../http/route';
import { RETRY_AFTER, unavailable } from '../http/route';
import { errorExample, errorShape, type InvalidField } from '../http/error-body';
import { ComponentRegistry, describeYup, descriptionToJsonSchema, yupToJsonSchema } from './yup-json-schema';
import { expandOptionalGroups, operationId, pathParamNames, toOpenApiPath } from './openapi-paths';

export interface RouteTableGroup {
  prefix: string;
  routes: RouteDef[];
  /** Its routes refuse a query parameter they do not declare (400): routes/index.ts. */
  strictQuery?: boolean;
}

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
  license?: { name: string; identifier?: string; url?: string };
}

export type OpenApiDocument = {
  openapi: '3.1.0';
  info: OpenApiInfo;
  servers: Array<{ url: string; description: string }>;
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: Record<string, Record<string, unknown>>;
  tags: Array<{ name: string; description: string }>;
} & Record<string, unknown>;

export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  description: string;
  schema: JsonSchema;
  example?: unknown;
}

export interface OpenApiHeader {
  description: string;
  required?: boolean;
  schema: JsonSchema;
}

export interface OpenApiMediaType {
  schema: JsonSchema;
  example?: unknown;
  encoding?: Record<string, { contentType: string }>;
}

export interface OpenApiResponse {
  description: string;
  headers: Record<string, { $ref: string } | OpenApiHeader>;
  content?: Record<string, OpenApiMediaType>;
}

export interface OpenApiOperation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: Array<Record<string, string[]>>;
  parameters?: OpenApiParameter[];
  requestBody?: { required: boolean; description?: string; content: Record<string, OpenApiMediaType> };
  responses: Record<string, OpenApiResponse>;
  'x-auth': 'public' | 'any' | string[];
}

export const SECURITY_SCHEME = 'bearerAuth';

/** The tags in the order a newcomer needs them: log in first, then what the API is about. */
export const TAGS: Array<{ name: string; description: string }> = [
  {
    name: 'Auth',
    description:
      'Start here: sign up, log in for an access token (1 h) and a refresh token (7 d), then click "Authorize" and paste the accessToken. Demo accounts: buyer@marketplace.test / Buyer123!, seller@marketplace.test / Seller123!, admin@marketplace.test / Admin123!.',
  },
  { name: 'Members', description: 'Your own profile; the admin’s member list.' },
  { name: 'Categories', description: 'The category tree (public); admins add categories.' },
  {
    name: 'Products',
    description:
      'Search and read the catalogue (public); sellers create, edit and delete their own products.',
  },
  { name: 'Images', description: 'Product images: sellers upload and delete them; the files are public.' },
  {
    name: 'Orders',
    description:
      'Buyers place and cancel orders (stock is never oversold); sellers move them forward PENDING -> CONFIRMED -> SHIPPED -> DELIVERED.',
  },
  {
    name: 'Notifications',
    description: 'OrderCreated (to sellers) and OrderStatusChanged (to buyers), delivered after commit.',
  },
  { name: 'Health', description: 'Liveness and readiness for load balancers and orchestrators.' },
  { name: 'Documentation', description: 'This document, Swagger UI and the order-lifecycle diagram.' },
];

const ERROR_REF = { $ref: '#/components/schemas/Error' };
// Every response carries the request id (lib/http/request-id.ts), errors and successes alike.
const RESPONSE_HEADERS = { 'X-Request-Id': { $ref: '#/components/headers/XRequestId' } };

function isYupSchema(schema: unknown): schema is yup.ISchema<unknown> {
  return yup.isSchema(schema);
}

/** The example of a response shape: its own, or for a list, a list of its item's example. */
function exampleOf(schema: yup.ISchema<unknown>): unknown {
  const d = describeYup(schema);
  if (d.meta?.example !== undefined) return d.meta.example;
  if (d.type === 'array' && d.innerType && !Array.isArray(d.innerType) && d.innerType.meta?.example) {
    return [d.innerType.meta.example];
  }
  return undefined;
}

class DocumentBuilder {
  readonly components = new ComponentRegistry();

  constructor() {
    // Named first so that components keep a stable, readable order.
    yupToJsonSchema(errorShape, this.components);
  }

  mediaType(
    schema: ResponseDoc['schema'],
    example = isYupSchema(schema) ? exampleOf(schema) : undefined,
  ): OpenApiMediaType {
    const out: OpenApiMediaType = {
      schema: isYupSchema(schema) ? yupToJsonSchema(schema, this.components) : (schema ?? { type: 'string' }),
    };
    if (example !== undefined) out.example = example;
    return out;
  }

  responseObject(doc: ResponseDoc, status: string, request: ErrorRequest): OpenApiResponse {
    const out: OpenApiResponse = {
      description: doc.description,
      headers: { ...RESPONSE_HEADERS, ...doc.headers },
    };
    // An error response's example is one of its own codes, not the Error component's (a 400).
    const example =
      doc.example ?? (doc.schema === errorShape ? errorExample(status, doc.description, request) : undefined);
    if (doc.schema) {
      out.content = { [doc.contentType ?? 'application/json']: this.mediaType(doc.schema, example) };
    } else if (doc.contentType) out.content = { [doc.contentType]: { schema: { type: 'string' } } };
    return out;
  }

  /** Responses declared by the route plus the ones the shared pipeline can answer for it. */
  responsesOf(def: RouteDef, request: ErrorRequest, strictQuery: boolean): Record<string, OpenApiResponse> {
    const out: Record<string, OpenApiResponse> = {};
    for (const [status, doc] of Object.entries(def.responses))
      out[status] = this.responseObject(doc, status, request);
    const error = (status: string, description: string, headers = {}): OpenApiResponse => ({
      description,
      headers: { ...RESPONSE_HEADERS, ...headers },
      content: {
        'application/json': { schema: ERROR_REF, example: errorExample(status, description, request) },
      },
    });
    const add = (status: number, description: string) => {
      out[String(status)] ??= error(String(status), description);
    };
    // An API operation also refuses a query parameter it does not declare (lib/http/route.ts).
    if (def.params || def.query || def.body || strictQuery)
      add(400, 'Invalid request (VALIDATION_ERROR), a JSON body that is not valid UTF-8 included');
    if (def.auth === 'public') {
      if (!def.ignoreBearer)
        add(401, 'A token was sent and is invalid or expired (INVALID_TOKEN, TOKEN_EXPIRED)');
    } else add(401, 'Not authenticated (UNAUTHENTICATED, INVALID_TOKEN, TOKEN_EXPIRED)');
    if (Array.isArray(def.auth)) add(403, `The caller's role is not ${def.auth.join(' or ')} (FORBIDDEN)`);
    if (def.body && !def.requestContentType) {
      add(413, 'JSON body over 1 MB (PAYLOAD_TOO_LARGE)');
      add(
        415,
        'Content-Type is not application/json, or names a charset other than UTF-8 (UNSUPPORTED_MEDIA_TYPE)',
      );
    }
    add(500, 'Unexpected error (INTERNAL_ERROR), logged with the request id');
    // Node's HTTP layer refuses some requests on any path before a route runs (lib/http/client-error.ts).
    out['4XX'] ??= error(
      '4XX',
      'Refused before routing, and the connection closed: headers over 16 KB (431 REQUEST_HEADERS_TOO_LARGE), a request too slow to arrive (408 REQUEST_TIMEOUT), a malformed request (400 VALIDATION_ERROR)',
    );
    // Every API operation reads the database (an authenticated call checks the member too): when it is down
    // or too slow the answer is 503 with Retry-After (lib/db-errors.ts). Documentation and health are apart.
    if (!def.tags.includes('Documentation') && !def.tags.includes('Health')) {
      out['503'] ??= error('503', unavailable()[1], RETRY_AFTER);
    }
    return out;
  }

  fieldParameters(
    schema: RouteDef['params'],
    where: 'path' | 'query' | 'header',
    at: string,
  ): OpenApiParameter[] {
    if (!schema) return [];
    const fields = describeYup(schema).fields ?? {};
    return Object.entries(fields).map(([name, field]) => {
      // Parameters are inlined (a component would hide the constraint from the parameter's own line).
      const { description, examples, ...jsonSchema } = descriptionToJsonSchema(field);
      if (typeof description !== 'string') throw new Error(`${at}: parameter "${name}" has no description`);
      const param: OpenApiParameter = {
        name,
        in: where,
        required: where === 'path' || !field.optional,
        description,
        schema: jsonSchema,
      };
      if (Array.isArray(examples)) param.example = examples[0];
      return param;
    });
  }

  parametersOf(def: RouteDef, concretePath: string, at: string): OpenApiParameter[] {
    const declared = this.fieldParameters(def.params, 'path', at);
    // Only the parameters this concrete path has (an optional group may have dropped some).
    const pathParams = pathParamNames(concretePath).map((name) => {
      const param = declared.find((p) => p.name === name);
      if (!param) throw new Error(`${at}: path parameter "${name}" is not in the route's params schema`);
      return param;
    });
    return [
      ...pathParams,
      ...this.fieldParameters(def.query, 'query', at),
      ...this.fieldParameters(def.headers, 'header', at),
    ];
  }

  requestBodyOf(def: RouteDef): OpenApiOperation['requestBody'] {
    if (def.requestContentType) {
      const schema = def.requestSchema ?? { type: 'object' };
      const encoding = def.requestEncoding;
      return {
        required: true,
        content: { [def.requestContentType]: { schema, ...(encoding ? { encoding } : {}) } },
      };
    }
    if (!def.body) return undefined;
    const { description, examples, ...schema } = yupToJsonSchema(def.body, this.components);
    const body: NonNullable<OpenApiOperation['requestBody']> = {
      // Required when an empty object would be refused (a required field, or "at least one field").
      required:
        (Array.isArray(schema.required) && schema.required.length > 0) || Number(schema.minProperties) > 0,
      content: { 'application/json': { schema } },
    };
    if (typeof description === 'string') body.description = description;
    if (Array.isArray(examples)) body.content['application/json'].example = examples[0];
    return body;
  }

  operationOf(
    def: RouteDef,
    concretePath: string,
    openApiPath: string,
    strictQuery = false,
  ): OpenApiOperation {
    const at = `${def.method.toUpperCase()} ${openApiPath}`;
    for (const tag of def.tags) {
      if (!TAGS.some((t) => t.name === tag)) throw new Error(`${at}: tag "${tag}" is not in TAGS`);
    }
    const parameters = this.parametersOf(def, concretePath, at);
    // The path of the error examples: each path parameter by its example (`bad` for an invalid one).
    const pathWith = (bad?: string) =>
      openApiPath.replace(/\{(\w+)\}/g, (_m, name: string) =>
        name === bad ? 'bad' : String(parameters.find((p) => p.name === name)?.example ?? 1),
      );
    const path = pathWith();
    const op: OpenApiOperation = {
      operationId: operationId(def.method, openApiPath),
      summary: def.summary,
      description: authText(def),
      tags: def.tags,
      security: securityOf(def),
      responses: this.responsesOf(def, { path, invalid: invalidField(def, pathWith) }, strictQuery),
      'x-auth': def.auth,
    };
    if (parameters.length > 0) op.parameters = parameters;
    const requestBody = this.requestBodyOf(def);
    if (requestBody) op.requestBody = requestBody;
    return op;
  }
}

/** Where an error example points: the request path, and a field a VALIDATION_ERROR example names. */
interface ErrorRequest {
  path: string;
  invalid?: InvalidField;
}

/** The first field of the route's body, else of its query, else of its path parameters. */
function invalidField(def: RouteDef, pathWith: (bad?: string) => string): InvalidField | undefined {
  for (const where of ['body', 'query', 'params'] as const) {
    const schema = def[where];
    const name = schema && Object.keys(describeYup(schema).fields ?? {})[0];
    if (name) return { where, name, path: pathWith(where === 'params' ? name : undefined) };
  }
  return undefined;
}

/**
 * A public operation that reads a sent token takes it optionally (`{}` or the bearer scheme): a valid one may
 * change the answer (a seller also sees its own DRAFTs), an invalid one is 401. One that ignores the
 * Authorization header has no security at all.
 */
function securityOf(def: RouteDef): OpenApiOperation['security'] {
  if (def.auth !== 'public') return [{ [SECURITY_SCHEME]: [] }];
  return def.ignoreBearer ? [] : [{}, { [SECURITY_SCHEME]: [] }];
}

function authText(def: RouteDef): string {
  if (def.auth === 'public' && def.ignoreBearer)
    return 'Public: no token needed (an Authorization header is ignored).';
  if (def.auth === 'public')
    return 'Public: no token needed. A valid token may be sent (e.g. a seller then also sees its own DRAFTs); an invalid one is 401.';
  if (def.auth === 'any') return 'Requires a Bearer access token (any role).';
  return `Requires a Bearer access token with the role ${def.auth.join(' or ')}.`;
}

export function buildOpenApiDocument(groups: RouteTableGroup[], info: OpenApiInfo): OpenApiDocument {
  const builder = new DocumentBuilder();
  const paths: OpenApiDocument['paths'] = {};
  const used = new Set<string>();
  for (const group of groups) {
    for (const def of group.routes) {
      for (const concrete of expandOptionalGroups(group.prefix + def.path)) {
        const openApiPath = toOpenApiPath(concrete);
        const item = (paths[openApiPath] ??= {});
        if (item[def.method])
          throw new Error(`Route ${def.method.toUpperCase()} ${openApiPath} is defined twice`);
        item[def.method] = builder.operationOf(def, concrete, openApiPath, group.strictQuery ?? false);
      }
      for (const tag of def.tags) used.add(tag);
    }
  }
  return {
    openapi: '3.1.0',
    info,
    // Relative: the service that serves this document (a local `npm start` is http://localhost:8080).
    servers: [{ url: '/', description: 'The service that serves this document' }],
    tags: TAGS.filter((tag) => used.has(tag.name)),
    paths,
    components: {
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'The accessToken from POST /api/v1/auth/login or /api/v1/auth/refresh',
        },
      },
      schemas: builder.components.schemas,
      headers: {
        XRequestId: {
          description:
            'The request id: a client-sent X-Request-Id of 1-64 characters [A-Za-z0-9._-] is reused, anything else is replaced by a UUID. Log lines of the request carry it.',
          required: true,
          schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
        },
      },
    },
  };
}
