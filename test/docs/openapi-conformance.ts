// Holds a real response against the served OpenAPI document (through the contract engine the harness uses
// for every response), and records which operations a test covered.
import type { ExecutionContext } from 'ava';
import type { OpenApiDocument } from '../../lib/openapi/openapi-document';
import { createContract } from '../helpers/contract';
import type { ApiResponse, TestApp } from '../helpers/harness';

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
  const contract = createContract(doc);
  const covered = new Set<string>();
  return {
    doc,
    covered,
    check(t, method, pathTemplate, res) {
      const where = `${method.toUpperCase()} ${pathTemplate} -> ${res.status}`;
      if (!doc.paths[pathTemplate]?.[method.toLowerCase()]) {
        t.fail(`${method} ${pathTemplate} is not in the OpenAPI document`);
        return;
      }
      covered.add(`${method.toUpperCase()} ${pathTemplate}`);
      // The template stands for the concrete path; a concrete path of the same shape is enough to match it.
      const concrete = pathTemplate.replace(/\{\w+\}/g, '1');
      t.is(contract.templateOf(concrete), pathTemplate, `${where}: the template is matched`);
      t.deepEqual(contract.problems(method, concrete, res), [], where);
    },
  };
}
