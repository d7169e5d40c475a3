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

export type Where = 'body' | 'query' | 'params';

/** Validates and casts `value`; throws ValidationError (400) naming each bad field. */
export async function validate<S extends yup.ISchema<unknown>>(
  schema: S,
  value: unknown,
  where: Where,
): Promise<yup.InferType<S>> {
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

/** A positive integer id in a path or query (`/products/abc` -> 400, not 404 or 500). */
export const id = () =>
  yup
    .number()
    .transform((value, original) =>
      typeof original === 'string' && !/^\d+$/.test(original.trim()) ? NaN : value,
    )
    .typeError('${path} must be a positive integer')
    .integer('${path} must be a positive integer')
    .min(1, '${path} must be a positive integer')
    .max(2_147_483_647, '${path} is too large');

/** An object schema that rejects fields it does not name (API.md: request schemas are strict). */
export function strictObject<T extends yup.ObjectShape>(shape: T) {
  return yup.object(shape).noUnknown(true, 'unknown field').strict(false);
}
