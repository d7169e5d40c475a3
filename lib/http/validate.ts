// The one validation path: yup schemas (strict about unknown fields) turned into API.md's
// VALIDATION_ERROR with one entry per offending field.
import * as yup from 'yup';
import { ValidationError, type FieldError } from '../errors';

function fieldErrors(err: yup.ValidationError, prefix: string): FieldError[] {
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
    out.push({
      field: `${prefix}${e.path ?? ''}` || prefix.replace(/\.$/, ''),
      message: e.errors[0] ?? e.message,
    });
  }
  return out;
}

export type Where = 'body' | 'query' | 'params' | 'headers';

interface SchemaShape {
  fields?: Record<string, SchemaShape>;
  innerType?: SchemaShape;
  type?: string;
}

/**
 * Keys a client sent that only exist on Object.prototype (`constructor`, `toString`, `__proto__`...).
 * yup looks fields up with `fields[key]` and would find the inherited member, so they are reported as
 * unknown fields here, before yup sees them.
 */
function inheritedKeys(schema: SchemaShape, value: unknown, path: string, out: FieldError[]): void {
  if (value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    if (schema.innerType)
      value.forEach((item, i) => inheritedKeys(schema.innerType!, item, `${path}[${i}]`, out));
    return;
  }
  if (!schema.fields) return;
  const prefix = path ? `${path}.` : '';
  for (const key of Object.keys(value)) {
    if (Object.hasOwn(schema.fields, key)) {
      inheritedKeys(schema.fields[key], (value as Record<string, unknown>)[key], `${prefix}${key}`, out);
    } else if (key in Object.prototype) {
      out.push({ field: `${prefix}${key}`, message: 'unknown field' });
    }
  }
}

function isPlainObject(value: unknown): boolean {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Validates and casts `value`; throws ValidationError (400) naming each bad field. */
export async function validate<S extends yup.ISchema<unknown>>(
  schema: S,
  value: unknown,
  where: Where,
): Promise<yup.InferType<S>> {
  const shape = schema as unknown as SchemaShape;
  if (shape.type === 'object' && !isPlainObject(value)) {
    throw new ValidationError(`Request ${where} must be a JSON object`, [
      { field: where, message: 'must be a JSON object' },
    ]);
  }
  const inherited: FieldError[] = [];
  inheritedKeys(shape, value, where === 'body' ? '' : where, inherited);
  if (inherited.length > 0) throw new ValidationError(`Invalid request ${where}`, inherited);
  try {
    return (await schema.validate(value, { abortEarly: false, stripUnknown: false })) as yup.InferType<S>;
  } catch (err) {
    if (err instanceof yup.ValidationError) {
      const prefix = where === 'body' ? '' : `${where}.`;
      throw new ValidationError(`Invalid request ${where}`, fieldErrors(err, prefix));
    }
    throw err;
  }
}

/**
 * A whole number from JSON or from a path/query string: a JSON number, or plain digits in a string.
 * Anything else (`-1`, `1e3`, `1.5`, `abc`, a repeated query parameter's array) fails the type check.
 */
export const integer = () =>
  yup.number().transform((value, original) => {
    if (typeof original === 'number') return value;
    if (typeof original === 'string' && /^\s*\d{1,10}\s*$/.test(original)) return value;
    return original === undefined ? undefined : NaN;
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
