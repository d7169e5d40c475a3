// Converts a yup schema into a JSON Schema (OpenAPI 3.1 dialect) from yup's own `describe()` output, so the
// documented request shapes are the very schemas `mountRoutes` validates with. Covers what yup exposes as data:
// types, required/optional, nullable, oneOf, defaults, min/max/length/more/less, integer, matches, email/url/uuid,
// noUnknown (strict objects), arrays and tuples. Custom `.test()` functions cannot be described and are left out.
import type * as yup from 'yup';
import type { JsonSchema } from '../http/route';

/** yup's description of a schema: the public `SchemaDescription` plus the fields of objects, arrays and tuples. */
export interface YupDescription {
  type: string;
  label?: string;
  meta?: Record<string, unknown>;
  oneOf: unknown[];
  notOneOf: unknown[];
  default?: unknown;
  nullable: boolean;
  optional: boolean;
  tests: Array<{ name?: string; params?: Record<string, unknown> }>;
  fields?: Record<string, YupDescription>;
  innerType?: YupDescription | YupDescription[];
}

export function describeYup(schema: yup.ISchema<unknown>): YupDescription {
  return (schema as unknown as { describe(): YupDescription }).describe();
}

const STRING_FORMATS: Record<string, string> = {
  email: 'email',
  url: 'uri',
  uuid: 'uuid',
  datetime: 'date-time',
};

function regexSource(value: unknown): string | undefined {
  return value instanceof RegExp ? value.source : undefined;
}

function baseType(d: YupDescription, tests: Set<string>): JsonSchema {
  switch (d.type) {
    case 'string':
      return { type: 'string' };
    case 'number':
      return { type: tests.has('integer') ? 'integer' : 'number' };
    case 'boolean':
      return { type: 'boolean' };
    case 'date':
      return { type: 'string', format: 'date-time' };
    case 'object':
      return { type: 'object' };
    case 'array':
    case 'tuple':
      return { type: 'array' };
    default:
      return {}; // mixed: any JSON value
  }
}

function applyTests(d: YupDescription, out: JsonSchema): void {
  const isString = d.type === 'string';
  const isArray = d.type === 'array';
  for (const test of d.tests) {
    const p = test.params ?? {};
    switch (test.name) {
      case 'min':
        if (isString) out.minLength = p.min;
        else if (isArray) out.minItems = p.min;
        else if (p.min !== undefined) out.minimum = p.min;
        else if (p.more !== undefined) out.exclusiveMinimum = p.more;
        break;
      case 'max':
        if (isString) out.maxLength = p.max;
        else if (isArray) out.maxItems = p.max;
        else if (p.max !== undefined) out.maximum = p.max;
        else if (p.less !== undefined) out.exclusiveMaximum = p.less;
        break;
      case 'length':
        if (isString) out.minLength = out.maxLength = p.length;
        else if (isArray) out.minItems = out.maxItems = p.length;
        break;
      case 'matches': {
        const source = regexSource(p.regex);
        if (source) out.pattern = source;
        break;
      }
      case 'email':
      case 'url':
      case 'uuid':
      case 'datetime':
        out.format = STRING_FORMATS[test.name];
        break;
      case 'required':
        // yup's required string rejects ''.
        if (isString && out.minLength === undefined) out.minLength = 1;
        break;
      case 'noUnknown':
        out.additionalProperties = false;
        break;
      default:
        break; // trim, lowercase, integer (handled in the type) and custom tests
    }
  }
}

function isJsonValue(value: unknown): boolean {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value) || Array.isArray(value);
}

/** JSON Schema of one described yup schema. */
export function descriptionToJsonSchema(d: YupDescription): JsonSchema {
  const tests = new Set(d.tests.map((t) => t.name ?? ''));
  const out: JsonSchema = baseType(d, tests);
  applyTests(d, out);

  if (d.fields) {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const [name, field] of Object.entries(d.fields)) {
      properties[name] = descriptionToJsonSchema(field);
      if (!field.optional) required.push(name);
    }
    out.properties = properties;
    if (required.length > 0) out.required = required;
  }
  if (Array.isArray(d.innerType)) {
    out.prefixItems = d.innerType.map(descriptionToJsonSchema);
    out.minItems = out.maxItems = d.innerType.length;
  } else if (d.innerType) {
    out.items = descriptionToJsonSchema(d.innerType);
  }

  const allowed = d.oneOf.filter((v) => v !== undefined);
  if (allowed.length > 0) out.enum = d.nullable && !allowed.includes(null) ? [...allowed, null] : allowed;
  const denied = d.notOneOf.filter((v) => v !== undefined);
  if (denied.length > 0) out.not = { enum: denied };

  if (d.nullable && typeof out.type === 'string') out.type = [out.type, 'null'];
  if (d.default !== undefined && isJsonValue(d.default)) out.default = d.default;
  if (d.label) out.title = d.label;
  const meta = d.meta ?? {};
  if (typeof meta.description === 'string') out.description = meta.description;
  if (meta.example !== undefined) out.examples = [meta.example];
  return out;
}

export function yupToJsonSchema(schema: yup.ISchema<unknown>): JsonSchema {
  return descriptionToJsonSchema(describeYup(schema));
}
