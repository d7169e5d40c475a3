// The one validation path: yup schemas (strict about unknown fields) turned into API.md's
// VALIDATION_ERROR with one entry per offending field.
import * as yup from 'yup';
import { ValidationError, type FieldError } from '../errors';

function fieldErrors(err: yup.ValidationError, where: Where): FieldError[] {
  const prefix = where === 'body' ? '' : `${where}.`;
  const inner = err.inner.length > 0 ? err.inner : [err];
  const out: FieldError[] = [];
  for (const e of inner) {
    if (e.type === 'noUnknown') {
      const unknown = String((e.params as { unknown?: string })?.unknown ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const base = e.path ? `${e.path}.` : '';
      for (const key of unknown) out.push({ field: `${prefix}${base}${key}`, message: 'unknown field' });
      continue;
    }
    // A test of the whole object (a PATCH with no field) names the object: "body", "query".
    const field = e.path ? `${prefix}${e.path}` : where;
    // One entry per field: a value of the wrong type also fails oneOf(), which would only repeat it.
    if (out.some((known) => known.field === field)) continue;
    out.push({ field, message: e.errors[0] ?? e.message });
  }
  return out;
}

export type Where = 'body' | 'query' | 'params' | 'headers';

interface SchemaShape {
  fields?: Record<string, SchemaShape>;
  innerType?: SchemaShape;
  type?: string;
  spec?: { meta?: { verbatim?: boolean } };
}

/**
 * A value yup's type check refuses whatever the field's transforms do, so the field's own typeError message
 * names it: yup never converts an array to a string, and NaN is no number. What arrives in its place (an
 * object with its own `toString`, an array, a nested object) would otherwise reach yup's casts, which call
 * `toString()`/`valueOf()` on it and throw a TypeError: a 500.
 */
const REFUSED_BY_TYPE: Record<string, () => unknown> = {
  string: () => [],
  number: () => NaN,
  boolean: () => NaN,
  date: () => NaN,
};

/**
 * A string's length in characters as JSON Schema's maxLength and MySQL's VARCHAR count them: code points, so an
 * emoji (two UTF-16 units in JavaScript) is one.
 */
export function charCount(value: string): number {
  let count = value.length;
  for (let i = 0; i < value.length - 1; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return count;
}

/**
 * yup's string `max`, counted in characters (charCount) rather than UTF-16 units: `schema.test(maxChars(n, msg))`.
 * The test keeps yup's name and params, so it replaces a `max` and the OpenAPI document's maxLength follows it.
 */
export const maxChars = (max: number, message: string): yup.TestConfig<string | null | undefined> => ({
  name: 'max',
  exclusive: true,
  params: { max },
  message,
  skipAbsent: true,
  test: (value) => value === null || value === undefined || value.length <= max || charCount(value) <= max,
});

// With the u flag a surrogate matches only when it is not half of a pair.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
// ASCII text is already in NFC.
const NOT_ASCII = /\P{ASCII}/u;
// SQLite's LIKE and FTS5 and bcrypt read a string only up to its first NUL; MySQL reads all of it.
const NUL = '\u0000';

/**
 * The kind of value a scalar field accepts: in a JSON body exactly the schema's JSON type (`"1"` is no
 * integer there); in a path, query or header, where everything arrives as text, any string.
 */
function rightKind(type: string, value: unknown, where: Where): boolean {
  if (value === null || value === undefined) return true;
  if (where !== 'body') return typeof value === 'string' || typeof value === type;
  return type === 'date' ? typeof value === 'string' : typeof value === type;
}

/**
 * One walk over the schema and the value before yup sees it:
 * - keys that only exist on Object.prototype (`constructor`, `toString`, `__proto__`...) are reported as unknown
 *   fields (yup looks fields up with `fields[key]` and would find the inherited member);
 * - strings holding a lone UTF-16 surrogate are refused (they cannot be stored as UTF-8; MySQL and SQLite would
 *   turn them into U+FFFD while the answer echoed them);
 * - strings holding a NUL character are refused: SQLite's LIKE and full-text search and bcrypt stop at it (a
 *   search would match on what comes before it, or fail; a password would be checked only up to it), MySQL not;
 * - a value of the wrong kind in a scalar field is swapped for one yup's type check refuses (see REFUSED_BY_TYPE);
 * - text in a body or a query is brought to Unicode NFC (W3C's "normalize on input"), unless its field is
 *   `verbatim` (passwords): the two spellings of an accented letter (one code point, or a letter and a combining
 *   mark) are then one text wherever text is stored, compared or searched.
 * Returns the value to hand to yup (a copy where something was swapped).
 */
function prepare(
  schema: SchemaShape,
  value: unknown,
  where: Where,
  path: string,
  out: FieldError[],
): unknown {
  if (typeof value === 'string') {
    // Named as yup names a field: `query.keyword` in `field`, `keyword` in the message.
    const field = path || where;
    const name = where !== 'body' && field.startsWith(`${where}.`) ? field.slice(where.length + 1) : field;
    if (LONE_SURROGATE.test(value)) {
      out.push({ field, message: `${name} must not contain lone UTF-16 surrogates` });
      return value;
    }
    if (value.includes(NUL)) {
      out.push({ field, message: `${name} must not contain the NUL character (U+0000)` });
      return value;
    }
    if (where !== 'headers' && where !== 'params' && !schema.spec?.meta?.verbatim && NOT_ASCII.test(value)) {
      value = value.normalize('NFC');
    }
  }
  const refused = schema.type ? REFUSED_BY_TYPE[schema.type] : undefined;
  if (refused) return rightKind(schema.type!, value, where) ? value : refused();
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    if (!schema.innerType || schema.type !== 'array') return value;
    return value.map((item, i) => prepare(schema.innerType!, item, where, `${path}[${i}]`, out));
  }
  if (!schema.fields || schema.type !== 'object') return value;
  const prefix = path ? `${path}.` : '';
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (Object.hasOwn(schema.fields, key)) {
      copy[key] = prepare(schema.fields[key], item, where, `${prefix}${key}`, out);
    } else {
      if (key in Object.prototype) out.push({ field: `${prefix}${key}`, message: 'unknown field' });
      copy[key] = item;
    }
  }
  return copy;
}

function isPlainObject(value: unknown): boolean {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Schemas found to hold an asynchronous test: yup's validateSync refuses them, so they take the async path.
 * Decided once per schema (none of this service's schemas has one today; the fallback keeps it correct if one
 * is added).
 */
const ASYNC_SCHEMAS = new WeakSet<object>();
const ASYNC_TEST = /returned a Promise during a synchronous validate/;

function toValidationError(err: unknown, where: Where): unknown {
  if (!(err instanceof yup.ValidationError)) return err;
  return new ValidationError(`Invalid request ${where}`, fieldErrors(err, where));
}

/**
 * Validates `value` and casts it (unless the schema is `.strict()`, as the order body is); throws ValidationError
 * (400) naming each bad field. Synchronous (yup's validateSync: no promise per field and test) unless the schema
 * has an asynchronous test, when the result is a promise.
 */
export function validateInput<S extends yup.ISchema<unknown>>(
  schema: S,
  value: unknown,
  where: Where,
): yup.InferType<S> | Promise<yup.InferType<S>> {
  const shape = schema as unknown as SchemaShape;
  if (shape.type === 'object' && !isPlainObject(value)) {
    throw new ValidationError(`Request ${where} must be a JSON object`, [
      { field: where, message: 'must be a JSON object' },
    ]);
  }
  const refused: FieldError[] = [];
  const prepared = prepare(shape, value, where, where === 'body' ? '' : where, refused);
  if (refused.length > 0) throw new ValidationError(`Invalid request ${where}`, refused);
  const options = { abortEarly: false, stripUnknown: false };
  if (!ASYNC_SCHEMAS.has(schema)) {
    try {
      return (schema as unknown as yup.Schema<unknown>).validateSync(prepared, options) as yup.InferType<S>;
    } catch (err) {
      if (!(err instanceof Error) || err instanceof yup.ValidationError || !ASYNC_TEST.test(err.message))
        throw toValidationError(err, where);
      ASYNC_SCHEMAS.add(schema);
    }
  }
  return (schema.validate(prepared, options) as Promise<yup.InferType<S>>).catch((err: unknown) => {
    throw toValidationError(err, where);
  });
}

/** Entries each schema's memo keeps before it starts over (a flood of distinct values cannot grow it). */
export const TEXT_MEMO_MAX_ENTRIES = 1_000;
const textMemos = new WeakMap<object, Map<string, unknown>>();

function copyOf(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(copyOf);
  if (value instanceof Date) return new Date(value.getTime());
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) out[key] = copyOf(inner);
  return out;
}

/**
 * `validateInput` for a path, query or header input (text only, so its JSON is an exact key). The schemas are
 * pure functions of the value (no conditions, no context, no clock), so a value validated once is not
 * validated again: a cached GET's path parameter or If-None-Match costs a lookup and a copy (handlers get
 * their own object). Only successes are kept; a bad value takes the full path each time.
 */
export function validateText<S extends yup.ISchema<unknown>>(
  schema: S,
  value: unknown,
  where: Exclude<Where, 'body'>,
): yup.InferType<S> | Promise<yup.InferType<S>> {
  let memo = textMemos.get(schema);
  if (!memo) textMemos.set(schema, (memo = new Map()));
  const key = JSON.stringify(value);
  const known = memo.get(key);
  if (known !== undefined) return copyOf(known) as yup.InferType<S>;
  const result = validateInput(schema, value, where);
  if (result instanceof Promise) return result;
  if (memo.size >= TEXT_MEMO_MAX_ENTRIES) memo.clear();
  memo.set(key, copyOf(result));
  return result;
}

/** `validateInput`, always as a promise. */
export async function validate<S extends yup.ISchema<unknown>>(
  schema: S,
  value: unknown,
  where: Where,
): Promise<yup.InferType<S>> {
  return validateInput(schema, value, where);
}

/**
 * A whole number from JSON or from a path/query string: a JSON number, or canonical digits in a string
 * (a body string never gets here: validate() refuses it first). Anything else (` 1`, `-1`, `1e3`, `1.5`,
 * `abc`, a repeated query parameter's array) fails the type check; null is left to nullable().
 */
export const integer = () =>
  yup.number().transform((value, original) => {
    if (typeof original === 'number') return value;
    if (typeof original === 'string' && /^\d{1,10}$/.test(original)) return value;
    return original === undefined || original === null ? original : NaN;
  });

/** A positive integer id in a path, query or body (`/products/abc` -> 400, not 404 or 500). */
export const id = () =>
  integer()
    .typeError('${path} must be a positive integer')
    .integer('${path} must be a positive integer')
    .min(1, '${path} must be a positive integer')
    .max(2_147_483_647, '${path} is too large');

/** An object schema that rejects fields it does not name (API.md: request schemas are strict). */
export function strictObject<T extends yup.ObjectShape>(shape: T) {
  return yup.object(shape).noUnknown(true, 'unknown field').strict(false);
}
