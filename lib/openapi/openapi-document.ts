// Builds the OpenAPI 3.1 document from the route table the app mounts (the same RouteDefs, yup schemas and
// response JSON Schemas), so the document cannot drift from what the service enforces. Errors the pipeline itself
// produces (401/403 from `auth`, 400 from validation, 415/413 for JSON bodies, 500) are added to every operation
// that can produce them, with API.md's error body as the shared `Error` component.
import { ERROR_SCHEMA, type JsonSchema, type ResponseDoc, type RouteDef } from '../http/route';
import { describeYup, descriptionToJsonSchema } from './yup-json-schema';
import { expandOptionalGroups, operationId, pathParamNames, toOpenApiPath } from './openapi-paths';

export interface RouteTableGroup {
  prefix: string;
  routes: RouteDef[];
}

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
}

export type OpenApiDocument = {
  openapi: '3.1.0';
  info: OpenApiInfo;
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: Record<string, Record<string, unknown>>;
  tags: Array<{ name: string }>;
} & Record<string, unknown>;

export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  description?: string;
  schema: JsonSchema;
}

export interface OpenApiResponse {
  description: string;
  headers: Record<string, { $ref: string } | { description: string; schema: JsonSchema }>;
  content?: Record<string, { schema: JsonSchema }>;
}

export interface OpenApiOperation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: Array<Record<string, string[]>>;
  parameters?: OpenApiParameter[];
  requestBody?: { required: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, OpenApiResponse>;
  'x-auth': 'public' | 'any' | string[];
}

export const SECURITY_SCHEME = 'bearerAuth';
const ERROR_REF = { $ref: '#/components/schemas/Error' };
// Every response carries the request id (lib/http/request-id.ts), errors and successes alike.
const RESPONSE_HEADERS = { 'X-Request-Id': { $ref: '#/components/headers/XRequestId' } };

function schemaRef(schema: JsonSchema): JsonSchema {
  return schema === ERROR_SCHEMA ? ERROR_REF : schema;
}

function responseObject(doc: ResponseDoc): OpenApiResponse {
  const out: OpenApiResponse = {
    description: doc.description,
    headers: { ...RESPONSE_HEADERS, ...doc.headers },
  };
  if (doc.schema)
    out.content = { [doc.contentType ?? 'application/json']: { schema: schemaRef(doc.schema) } };
  else if (doc.contentType) out.content = { [doc.contentType]: { schema: { type: 'string' } } };
  return out;
}

function errorResponse(description: string): OpenApiResponse {
  return { description, headers: RESPONSE_HEADERS, content: { 'application/json': { schema: ERROR_REF } } };
}

function authText(def: RouteDef): string {
  if (def.auth === 'public' && def.ignoreBearer)
    return 'Public: no token needed (an Authorization header is ignored).';
  if (def.auth === 'public') return 'Public: no token needed (a token, if sent, must be valid).';
  if (def.auth === 'any') return 'Requires a Bearer access token (any role).';
  return `Requires a Bearer access token with the role ${def.auth.join(' or ')}.`;
}

/** Responses declared by the route plus the ones the shared pipeline can answer for it. */
function responsesOf(def: RouteDef): Record<string, OpenApiResponse> {
  const out: Record<string, OpenApiResponse> = {};
  for (const [status, doc] of Object.entries(def.responses)) out[status] = responseObject(doc);
  const add = (status: number, description: string) => {
    out[String(status)] ??= errorResponse(description);
  };
  if (def.params || def.query || def.body) add(400, 'Invalid request (VALIDATION_ERROR)');
  if (def.auth === 'public') {
    if (!def.ignoreBearer) add(401, 'The token sent is invalid or expired (INVALID_TOKEN, TOKEN_EXPIRED)');
  } else add(401, 'Not authenticated (UNAUTHENTICATED, INVALID_TOKEN, TOKEN_EXPIRED)');
  if (Array.isArray(def.auth)) add(403, `The caller's role is not ${def.auth.join(' or ')} (FORBIDDEN)`);
  if (def.body && !def.requestContentType) {
    add(413, 'JSON body over 1 MB (PAYLOAD_TOO_LARGE)');
    add(415, 'Content-Type is not application/json (UNSUPPORTED_MEDIA_TYPE)');
  }
  add(500, 'Unexpected error (INTERNAL_ERROR), logged with the request id');
  return out;
}

function fieldParameters(schema: RouteDef['params'], where: 'path' | 'query' | 'header'): OpenApiParameter[] {
  if (!schema) return [];
  const fields = describeYup(schema).fields ?? {};
  return Object.entries(fields).map(([name, field]) => {
    const param: OpenApiParameter = {
      name,
      in: where,
      required: where === 'path' || !field.optional,
      schema: descriptionToJsonSchema(field),
    };
    if (typeof param.schema.description === 'string') param.description = param.schema.description;
    return param;
  });
}

function parametersOf(def: RouteDef, concretePath: string): OpenApiParameter[] {
  const names = pathParamNames(concretePath);
  const declared = fieldParameters(def.params, 'path');
  // Only the parameters this concrete path has (an optional group may have dropped some).
  const pathParams = names.map(
    (name) =>
      declared.find((p) => p.name === name) ?? {
        name,
        in: 'path' as const,
        required: true,
        schema: { type: 'string' },
      },
  );
  return [...pathParams, ...fieldParameters(def.query, 'query'), ...fieldParameters(def.headers, 'header')];
}

function requestBodyOf(def: RouteDef): OpenApiOperation['requestBody'] {
  if (!def.body && !def.requestContentType) return undefined;
  const schema: JsonSchema = def.body
    ? descriptionToJsonSchema(describeYup(def.body))
    : (def.requestSchema ?? { type: 'object' });
  const required = Array.isArray(schema.required) && schema.required.length > 0;
  return {
    required: required || !!def.requestContentType,
    content: { [def.requestContentType ?? 'application/json']: { schema } },
  };
}

function securityOf(def: RouteDef): OpenApiOperation['security'] {
  if (def.auth !== 'public') return [{ [SECURITY_SCHEME]: [] }];
  // Public routes accept an optional token (e.g. a seller sees its own drafts): `{}` marks "no auth" as allowed.
  // Routes that ignore the Authorization header (login, refresh) take none.
  return def.ignoreBearer ? [] : [{}, { [SECURITY_SCHEME]: [] }];
}

function operationOf(def: RouteDef, concretePath: string, openApiPath: string): OpenApiOperation {
  const op: OpenApiOperation = {
    operationId: operationId(def.method, openApiPath),
    summary: def.summary,
    description: authText(def),
    tags: def.tags,
    security: securityOf(def),
    responses: responsesOf(def),
    'x-auth': def.auth,
  };
  const parameters = parametersOf(def, concretePath);
  if (parameters.length > 0) op.parameters = parameters;
  const requestBody = requestBodyOf(def);
  if (requestBody) op.requestBody = requestBody;
  return op;
}

export function buildOpenApiDocument(groups: RouteTableGroup[], info: OpenApiInfo): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  const tags = new Set<string>();
  for (const group of groups) {
    for (const def of group.routes) {
      for (const concrete of expandOptionalGroups(group.prefix + def.path)) {
        const openApiPath = toOpenApiPath(concrete);
        const item = (paths[openApiPath] ??= {});
        if (item[def.method])
          throw new Error(`Route ${def.method.toUpperCase()} ${openApiPath} is defined twice`);
        item[def.method] = operationOf(def, concrete, openApiPath);
      }
      for (const tag of def.tags) tags.add(tag);
    }
  }
  return {
    openapi: '3.1.0',
    info,
    tags: [...tags].map((name) => ({ name })),
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
      schemas: { Error: ERROR_SCHEMA },
      headers: {
        XRequestId: {
          description:
            'The request id: a client-sent X-Request-Id of 1-64 characters [A-Za-z0-9._-] is reused, anything else is replaced by a UUID. Log lines of the request carry it.',
          schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
        },
      },
    },
  };
}
