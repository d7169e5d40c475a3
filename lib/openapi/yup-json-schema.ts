// Converts a yup schema into a JSON Schema (OpenAPI 3.1 dialect) from yup's own `describe()` output, so the
// documented request AND response shapes are the very yup schemas the service validates with and types from.
// Covers what yup exposes as data: types, required/optional, nullable, oneOf, defaults, min/max/length/more/less,
// integer, matches (a case-insensitive regex is spelled out, JSON Schema patterns have no flags),
// email/url/uuid/datetime, noUnknown (strict objects), arrays and tuples. What a custom `.test()` checks is
// carried by the schema's meta (see SchemaDocs). A schema whose meta names a `component` is emitted once under
// #/components/schemas and referenced by `$ref` everywhere it is used.
//
// Why not @sodaru/yup-to-json-schema (checked, 2.0.1 with yup 1.7): it drops `noUnknown` (no
// additionalProperties: false), documents a nullable oneOf without null (so null fails the schema), adds
// `default: {}` to every object, and has no notion of named components; wrapping it would mean two converters.
import type * as yup from 'yup';
import type { JsonSchema } from '../http/route';

/** What a yup schema's `.meta()` may carry for the document (checked by the compiler at every `.meta()`). */
export interface SchemaDocs {
  /** Emit this schema once as #/components/schemas/<component> and `$ref` it. */
  component?: string;
  description?: string;
  /** A value the schema accepts; becomes `examples: [example]` (and the media-type example of a response). */
  example?: unknown;
  /** JSON Schema keywords a custom `.test()` enforces (e.g. `minProperties`, `dependentRequired`), merged last. */
  jsonSchema?: JsonSchema;
  /** A union: the value is exactly one of these (object) schemas, told apart by the `discriminator` field. */
  oneOf?: yup.ISchema<unknown>[];
  discriminator?: string;
  /** Taken exactly as sent: not brought to Unicode NFC as every other text of a body or query is (passwords). */
  verbatim?: boolean;
}

declare module 'yup' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- yup's documented extension point
  interface CustomSchemaMetadata extends SchemaDocs {}
}

/** yup's description of a schema: the public `SchemaDescription` plus the fields of objects, arrays and tuples. */
export interface YupDescription {
  type: string;
  label?: string;
  meta?: SchemaDocs;
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

/** Named schemas collected while converting; a name defined twice with different content is a bug. */
export class ComponentRegistry {
  readonly schemas: Record<string, JsonSchema> = {};

  register(name: string, schema: JsonSchema): void {
    const existing = this.schemas[name];
    if (existing && JSON.stringify(existing) !== JSON.stringify(schema)) {
      throw new Error(`Two different schemas are both named "${name}"`);
    }
    this.schemas[name] = schema;
  }
}

const STRING_FORMATS: Record<string, string> = {
  email: 'email',
  url: 'uri',
  uuid: 'uuid',
  datetime: 'date-time',
};

/** `/^a[bc]$/i` -> `^[aA][bc]$`: letters outside a character class match either case. */
function caseInsensitiveSource(regex: RegExp): string {
  if (!regex.flags.includes('i')) return regex.source;
  let out = '';
  let inClass = false;
  for (let i = 0; i < regex.source.length; i++) {
    const ch = regex.source[i];
    if (ch === '\\') {
      out += ch + regex.source[++i];
      continue;
    }
    if (ch === '[') inClass = true;
    else if (ch === ']') inClass = false;
    const lower = ch.toLowerCase();
    const upper = ch.toUpperCase();
    out += !inClass && lower !== upper ? `[${lower}${upper}]` : ch;
  }
  return out;
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
      case 'matches':
        if (p.regex instanceof RegExp) out.pattern = caseInsensitiveSource(p.regex);
        break;
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
        break; // trim, lowercase, integer (handled in the type) and custom tests (documented through meta)
    }
  }
}

function isJsonValue(value: unknown): boolean {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value) || Array.isArray(value);
}

function unionOf(meta: SchemaDocs, registry: ComponentRegistry | undefined): JsonSchema {
  const variants = (meta.oneOf ?? []).map(describeYup);
  const out: JsonSchema = { oneOf: variants.map((v) => descriptionToJsonSchema(v, registry)) };
  if (meta.discriminator) {
    const mapping: Record<string, string> = {};
    for (const variant of variants) {
      const tag = variant.fields?.[meta.discriminator]?.oneOf.find((v) => typeof v === 'string');
      const name = variant.meta?.component;
      if (typeof tag !== 'string' || !name) {
        throw new Error(`Each variant needs a component name and a one-value "${meta.discriminator}" field`);
      }
      mapping[tag] = `#/components/schemas/${name}`;
    }
    out.discriminator = { propertyName: meta.discriminator, mapping };
  }
  return out;
}

/** The schema itself, ignoring its own component name (the body of the component). */
function inlineSchema(d: YupDescription, registry: ComponentRegistry | undefined): JsonSchema {
  const meta = d.meta ?? {};
  if (meta.oneOf) return { ...unionOf(meta, registry), ...docsOf(d) };
  const tests = new Set(d.tests.map((t) => t.name ?? ''));
  const out: JsonSchema = baseType(d, tests);
  applyTests(d, out);

  if (d.fields) {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const [name, field] of Object.entries(d.fields)) {
      properties[name] = descriptionToJsonSchema(field, registry);
      if (!field.optional) required.push(name);
    }
    out.properties = properties;
    if (required.length > 0) out.required = required;
  }
  if (Array.isArray(d.innerType)) {
    out.prefixItems = d.innerType.map((inner) => descriptionToJsonSchema(inner, registry));
    out.minItems = out.maxItems = d.innerType.length;
  } else if (d.innerType) {
    out.items = descriptionToJsonSchema(d.innerType, registry);
  }

  const allowed = d.oneOf.filter((v) => v !== undefined);
  if (allowed.length === 1 && !d.nullable) out.const = allowed[0];
  else if (allowed.length > 0)
    out.enum = d.nullable && !allowed.includes(null) ? [...allowed, null] : allowed;
  const denied = d.notOneOf.filter((v) => v !== undefined);
  if (denied.length > 0) out.not = { enum: denied };

  if (d.nullable && typeof out.type === 'string') out.type = [out.type, 'null'];
  if (d.default !== undefined && isJsonValue(d.default)) out.default = d.default;
  return { ...out, ...docsOf(d) };
}

function docsOf(d: YupDescription): JsonSchema {
  const out: JsonSchema = {};
  const meta = d.meta ?? {};
  if (d.label) out.title = d.label;
  if (meta.description !== undefined) out.description = meta.description;
  if (meta.example !== undefined) out.examples = [meta.example];
  return { ...out, ...meta.jsonSchema };
}

/**
 * JSON Schema of one described yup schema. With a registry, schemas named by `meta.component` are registered
 * there and referenced; without one they are inlined (for a self-contained schema).
 */
export function descriptionToJsonSchema(d: YupDescription, registry?: ComponentRegistry): JsonSchema {
  const name = d.meta?.component;
  if (!name || !registry) return inlineSchema(d, registry);
  registry.register(name, inlineSchema(d, registry));
  const ref: JsonSchema = { $ref: `#/components/schemas/${name}` };
  return d.nullable ? { oneOf: [ref, { type: 'null' }] } : ref;
}

export function yupToJsonSchema(schema: yup.ISchema<unknown>, registry?: ComponentRegistry): JsonSchema {
  return descriptionToJsonSchema(describeYup(schema), registry);
}
