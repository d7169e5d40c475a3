// The contract test's engine: holds a real response against the served OpenAPI document with stock ajv
// (JSON Schema 2020-12, strict, ajv-formats). The operation must exist (or the response must be the router's
// own 404/405/preflight answer), the status must be documented, required headers sent, the Content-Type one
// of the documented ones, and a JSON body must validate against the documented schema. Each schema is
// compiled once per process.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { OpenApiDocument, OpenApiResponse } from '../../lib/openapi/openapi-document';

// ajv-formats is CommonJS; under ESM its function may sit on `default`.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as typeof addFormatsModule;

export interface ResponseLike {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

const BASE = 'https://marketplace.invalid/openapi.json';

/** `#/components/schemas/X` -> a reference into the one schema ajv holds (the components as $defs). */
function rebase(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rebase);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    out[key] =
      key === '$ref' && typeof value === 'string'
        ? value.replace('#/components/schemas/', `${BASE}#/$defs/`)
        : rebase(value);
  }
  return out;
}

function mediaMatches(documented: string, actual: string): boolean {
  const [type, sub] = documented.split('/');
  const [aType, aSub] = actual.split('/');
  return (type === '*' || type === aType) && (sub === '*' || sub === aSub);
}

export interface Contract {
  doc: OpenApiDocument;
  /** The documented path template a concrete path belongs to, or null. */
  templateOf(path: string): string | null;
  /** Every way the response breaks the document (empty when it conforms). */
  problems(method: string, url: string, res: ResponseLike): string[];
}

export function createContract(doc: OpenApiDocument): Contract {
  const ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
  addFormats(ajv);
  // OpenAPI's annotation for code generators; the oneOf next to it does the validating.
  ajv.addKeyword('discriminator');
  ajv.addSchema({ $id: BASE, $defs: rebase(doc.components.schemas) as Record<string, unknown> });
  const compiled = new Map<string, ValidateFunction>();
  const validatorFor = (key: string, schema: unknown) => {
    let fn = compiled.get(key);
    if (!fn) {
      fn = ajv.compile(rebase(schema) as object);
      compiled.set(key, fn);
    }
    return fn;
  };

  const templates = Object.keys(doc.paths).map((template) => ({
    template,
    segments: template.split('/'),
  }));
  function templateOf(path: string): string | null {
    const segments = path.split('/');
    let best: { template: string; literal: number } | null = null;
    for (const t of templates) {
      if (t.segments.length !== segments.length) continue;
      let literal = 0;
      const ok = t.segments.every((seg, i) => {
        if (/^\{\w+\}$/.test(seg)) return segments[i] !== '';
        literal++;
        // The router matches paths case-insensitively (`/API/V1/...` is served), so the contract does too.
        return seg.toLowerCase() === segments[i].toLowerCase();
      });
      if (ok && (!best || literal > best.literal)) best = { template: t.template, literal };
    }
    return best?.template ?? null;
  }

  const errorSchema = { $ref: '#/components/schemas/Error' };
  const headerRefs = (doc.components.headers ?? {}) as Record<string, { required?: boolean }>;

  function checkBody(where: string, key: string, documented: OpenApiResponse, res: ResponseLike): string[] {
    const contentType = (res.headers.get('content-type') ?? '').split(';')[0].trim();
    if (!documented.content)
      return res.text === '' ? [] : [`${where}: documented without a body, but sent one`];
    const entry = Object.entries(documented.content).find(([media]) => mediaMatches(media, contentType));
    if (!entry) {
      return [
        `${where}: Content-Type ${contentType || '(none)'} is not one of ${Object.keys(documented.content).join(', ')}`,
      ];
    }
    if (entry[0] !== 'application/json') return [];
    const validate = validatorFor(`${key} ${entry[0]}`, entry[1].schema);
    if (validate(res.body)) return [];
    return (validate.errors ?? []).map(
      (e) => `${where}: body${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`,
    );
  }

  function problems(method: string, url: string, res: ResponseLike): string[] {
    const path = new URL(url, 'http://x').pathname;
    const verb = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
    const where = `${method.toUpperCase()} ${path} -> ${res.status}`;
    const template = templateOf(path);
    const op = template ? doc.paths[template][verb] : undefined;
    if (!op) {
      // Answers of the router itself (lib/http/fallback.ts, CORS): unknown path, other method, preflight.
      const fallback = !template ? res.status === 404 : res.status === 405 || res.status === 404;
      if (verb === 'options' && (res.status === 204 || res.status === 405)) return [];
      if (!fallback) return [`${where}: no such operation in the OpenAPI document`];
      const validate = validatorFor('fallback', errorSchema);
      return validate(res.body)
        ? []
        : [`${where}: the router's error body breaks Error: ${ajv.errorsText(validate.errors)}`];
    }
    const documented = op.responses[String(res.status)];
    if (!documented) {
      return [
        `${where}: status not documented for ${verb} ${template} (documented: ${Object.keys(op.responses).join(', ')})`,
      ];
    }
    const out: string[] = [];
    for (const [name, header] of Object.entries(documented.headers ?? {})) {
      const required =
        '$ref' in header ? headerRefs[header.$ref.split('/').pop() ?? '']?.required : header.required;
      if (required && !res.headers.get(name)) out.push(`${where}: required header ${name} is missing`);
    }
    if (method.toLowerCase() === 'head') return out;
    return [...out, ...checkBody(where, `${verb} ${template} ${res.status}`, documented, res)];
  }

  return { doc, templateOf, problems };
}
