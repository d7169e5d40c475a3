// Holds a real response against the served OpenAPI document: the operation exists, the status is documented,
// the Content-Type is a documented one, and a JSON body conforms to the documented schema.
import type { ExecutionContext } from 'ava';
import type { OpenApiDocument } from '../../lib/openapi/openapi-document';
import { checkJsonSchema } from '../../lib/openapi/json-schema-check';
import type { ApiResponse, TestApp } from '../helpers/harness';

function mediaMatches(documented: string, actual: string): boolean {
  const [type, sub] = documented.split('/');
  const [aType, aSub] = actual.split('/');
  return (type === '*' || type === aType) && (sub === '*' || sub === aSub);
}

export interface Conformance {
  doc: OpenApiDocument;
  /** `METHOD path` of every operation checked so far. */
  covered: Set<string>;
  check(t: ExecutionContext, method: string, pathTemplate: string, res: ApiResponse): void;
}

export async function loadConformance(app: TestApp): Promise<Conformance> {
  const res = await app.request('GET', '/api/v1/openapi.json');
  if (res.status !== 200) throw new Error(`openapi.json answered ${res.status}`);
  const doc = res.body as OpenApiDocument;
  const covered = new Set<string>();
  return {
    doc,
    covered,
    check(t, method, pathTemplate, res) {
      const where = `${method.toUpperCase()} ${pathTemplate} -> ${res.status}`;
      const op = doc.paths[pathTemplate]?.[method.toLowerCase()];
      if (!op) {
        t.fail(`${method} ${pathTemplate} is not in the OpenAPI document`);
        return;
      }
      covered.add(`${method.toUpperCase()} ${pathTemplate}`);
      const documented = op.responses[String(res.status)];
      if (!documented) {
        t.fail(`${where} is not documented (documented: ${Object.keys(op.responses).join(', ')})`);
        return;
      }
      for (const name of Object.keys(documented.headers ?? {})) {
        t.truthy(res.headers.get(name), `${where}: documented header ${name} is sent`);
      }
      const contentType = (res.headers.get('content-type') ?? '').split(';')[0].trim();
      if (!documented.content) {
        t.is(res.text, '', `${where}: documented without a body`);
        return;
      }
      const entry = Object.entries(documented.content).find(([media]) => mediaMatches(media, contentType));
      if (!entry) {
        t.fail(`${where}: Content-Type ${contentType} is not one of ${Object.keys(documented.content).join(', ')}`);
        return;
      }
      const body = contentType === 'application/json' ? res.body : res.text;
      t.deepEqual(checkJsonSchema(entry[1].schema, body, { root: doc }), [], where);
    },
  };
}
