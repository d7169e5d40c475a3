// Field builders for response shapes (the yup schemas every response body is typed and documented from).
// Every field of a response is present (`defined`), so the derived TypeScript type has no optional keys.
import * as yup from 'yup';
import { MAX_PAGE_SIZE } from './pagination';

export const intField = () => yup.number().integer().defined();
export const idField = () => yup.number().integer().min(1).defined();
export const stringField = () => yup.string().defined();
/** A time as the API renders it: ISO-8601 UTC with milliseconds. */
export const timeField = () => yup.string().datetime().defined();

/** A money amount: a JSON number with at most 2 decimals (no `multipleOf: 0.01`: binary floats break it). */
export const moneyField = (description = 'An amount with at most 2 decimals') =>
  yup.number().min(0).defined().meta({ description });

/** A one-value string: the discriminator of a union, a constant such as tokenType. */
export const constString = <T extends string>(value: T) =>
  yup
    .string<T>()
    .oneOf([value] as const)
    .defined();

/** One of a fixed list of strings (a status, a role). */
export const enumField = <T extends string>(values: readonly T[]) =>
  yup
    .string<T>()
    .oneOf([...values])
    .defined();

/** API.md's page envelope around `item`, named `component` (ProductPage, OrderPage...). */
export function pageShape<T>(item: yup.ISchema<T>, component: string) {
  return yup
    .object({
      content: yup.array(item).defined(),
      page: intField().min(0).meta({ description: 'This page, from 0' }),
      size: intField().min(1).max(MAX_PAGE_SIZE).meta({ description: 'The requested page size' }),
      totalElements: intField().min(0),
      totalPages: intField().min(0),
      hasNext: yup.boolean().defined(),
    })
    .noUnknown()
    .meta({ component });
}
