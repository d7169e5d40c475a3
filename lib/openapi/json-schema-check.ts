// A small JSON Schema (2020-12 / OpenAPI 3.1) checker for the subset this service's documents use, so tests can
// hold real responses against the documented schemas without another dependency. It refuses schemas with a
// keyword it does not implement (rather than silently passing them), so the subset cannot quietly grow.
import type { JsonSchema } from '../http/route';

const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'example',
  'examples',
  'readOnly',
  'writeOnly',
  'deprecated',
  '$comment',
]);
const KEYWORDS = new Set([
  'type',
  'enum',
  'const',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'prefixItems',
  'minItems',
  'maxItems',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'uniqueItems',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  '$ref',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
]);

const FORMATS: Record<string, RegExp> = {
  'date-time': /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/,
  email: /^[^\s@]+@[^\s@]+$/,
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  uri: /^[a-z][a-z0-9+.-]*:\S*$/i,
};

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function typeMatches(value: unknown, type: string): boolean {
  const actual = typeOf(value);
  return actual === type || (type === 'number' && actual === 'integer');
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export interface SchemaCheckOptions {
  /** The document `$ref`s point into (`#/components/schemas/X`). */
  root?: Record<string, unknown>;
}

/** Every way `value` breaks `schema`, as `path: message` lines (empty when it conforms). */
export function checkJsonSchema(
  schema: JsonSchema,
  value: unknown,
  options: SchemaCheckOptions = {},
): string[] {
  const errors: string[] = [];
  check(schema, value, '$', options.root ?? {}, errors);
  return errors;
}

function resolveRef(ref: string, root: Record<string, unknown>): JsonSchema {
  if (!ref.startsWith('#/')) throw new Error(`Only local $refs are supported: ${ref}`);
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) node = (node as Record<string, unknown> | undefined)?.[part];
  if (!node || typeof node !== 'object') throw new Error(`Unresolvable $ref ${ref}`);
  return node as JsonSchema;
}

function check(
  schema: JsonSchema,
  value: unknown,
  at: string,
  root: Record<string, unknown>,
  errors: string[],
): void {
  for (const key of Object.keys(schema)) {
    if (!KEYWORDS.has(key) && !ANNOTATIONS.has(key))
      throw new Error(`Unsupported JSON Schema keyword "${key}" at ${at}`);
  }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a schema is untyped JSON; each keyword is used by shape
  const s = schema as Record<string, any>;
  if (s.$ref) check(resolveRef(s.$ref, root), value, at, root, errors);

  if (s.type !== undefined) {
    const types: string[] = Array.isArray(s.type) ? s.type : [s.type];
    if (!types.some((t) => typeMatches(value, t))) {
      errors.push(`${at}: expected ${types.join(' or ')}, got ${typeOf(value)}`);
      return; // the other keywords would only repeat the mismatch
    }
  }
  if (s.enum && !s.enum.some((v: unknown) => deepEqual(v, value))) {
    errors.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(s.enum)}`);
  }
  if ('const' in s && !deepEqual(s.const, value)) errors.push(`${at}: expected ${JSON.stringify(s.const)}`);

  if (typeof value === 'number') {
    if (s.minimum !== undefined && value < s.minimum) errors.push(`${at}: ${value} < minimum ${s.minimum}`);
    if (s.maximum !== undefined && value > s.maximum) errors.push(`${at}: ${value} > maximum ${s.maximum}`);
    if (s.exclusiveMinimum !== undefined && value <= s.exclusiveMinimum)
      errors.push(`${at}: ${value} <= ${s.exclusiveMinimum}`);
    if (s.exclusiveMaximum !== undefined && value >= s.exclusiveMaximum)
      errors.push(`${at}: ${value} >= ${s.exclusiveMaximum}`);
    if (s.multipleOf !== undefined) {
      // money: 19.99 / 0.01 is 1998.9999999999998 in binary floats, so compare with a tolerance
      const ratio = value / s.multipleOf;
      if (Math.abs(ratio - Math.round(ratio)) > 1e-9)
        errors.push(`${at}: ${value} is not a multiple of ${s.multipleOf}`);
    }
  }
  if (typeof value === 'string') {
    const length = [...value].length;
    if (s.minLength !== undefined && length < s.minLength) errors.push(`${at}: shorter than ${s.minLength}`);
    if (s.maxLength !== undefined && length > s.maxLength) errors.push(`${at}: longer than ${s.maxLength}`);
    if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(value))
      errors.push(`${at}: does not match ${s.pattern}`);
    if (s.format && FORMATS[s.format] && !FORMATS[s.format].test(value))
      errors.push(`${at}: not a ${s.format}`);
  }
  if (Array.isArray(value)) {
    if (s.minItems !== undefined && value.length < s.minItems)
      errors.push(`${at}: fewer than ${s.minItems} items`);
    if (s.maxItems !== undefined && value.length > s.maxItems)
      errors.push(`${at}: more than ${s.maxItems} items`);
    if (s.uniqueItems && new Set(value.map((v) => JSON.stringify(v))).size !== value.length) {
      errors.push(`${at}: items are not unique`);
    }
    const prefix: JsonSchema[] = s.prefixItems ?? [];
    value.forEach((item, i) => {
      const itemSchema = i < prefix.length ? prefix[i] : s.items;
      if (itemSchema) check(itemSchema, item, `${at}[${i}]`, root, errors);
    });
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    for (const name of (s.required ?? []) as string[]) {
      if (!(name in obj)) errors.push(`${at}: missing required property "${name}"`);
    }
    const props: Record<string, JsonSchema> = s.properties ?? {};
    for (const [name, v] of Object.entries(obj)) {
      if (props[name]) check(props[name], v, `${at}.${name}`, root, errors);
      else if (s.additionalProperties === false) errors.push(`${at}: unexpected property "${name}"`);
      else if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        check(s.additionalProperties, v, `${at}.${name}`, root, errors);
      }
    }
  }
  for (const sub of (s.allOf ?? []) as JsonSchema[]) check(sub, value, at, root, errors);
  if (s.anyOf || s.oneOf) {
    const options: JsonSchema[] = s.anyOf ?? s.oneOf;
    const passing = options.filter((sub) => checkJsonSchema(sub, value, { root }).length === 0).length;
    if (s.anyOf && passing === 0) errors.push(`${at}: matches none of anyOf`);
    if (s.oneOf && passing !== 1) errors.push(`${at}: matches ${passing} of oneOf (must be exactly 1)`);
  }
  if (s.not && checkJsonSchema(s.not, value, { root }).length === 0)
    errors.push(`${at}: must not match "not"`);
}
