// The validation path's shortcuts (lib/http/validate.ts): yup's synchronous validation with a fallback for
// schemas holding an asynchronous test, and the memo of validated path/query/header values. The HTTP behaviour
// they must not change is pinned by the route tests (test/http/*, test/routes/*); these pin the shortcuts.
import test from 'ava';
import * as yup from 'yup';
import { ValidationError } from '../../lib/errors';
import {
  TEXT_MEMO_MAX_ENTRIES,
  id,
  strictObject,
  validate,
  validateInput,
  validateText,
} from '../../lib/http/validate';

test('a schema without asynchronous tests is validated synchronously (no promise)', (t) => {
  const schema = strictObject({ productId: id().required() });
  const result = validateInput(schema, { productId: '42' }, 'params');
  t.false(result instanceof Promise);
  t.deepEqual(result, { productId: 42 });
});

test('a schema with an asynchronous test falls back to the async path, and keeps its verdicts', async (t) => {
  const schema = strictObject({
    name: yup
      .string()
      .required()
      .test('async-check', '${path} is taken', async (value) => value !== 'taken'),
  });
  const first = validateInput(schema, { name: 'free' }, 'body');
  t.true(first instanceof Promise);
  t.deepEqual(await first, { name: 'free' });
  const refused = await t.throwsAsync(() => validate(schema, { name: 'taken' }, 'body'), {
    instanceOf: ValidationError,
  });
  t.deepEqual(refused?.details?.errors, [{ field: 'name', message: 'name is taken' }]);
});

test('the text memo returns the same value as a fresh validation, as a copy each time', async (t) => {
  const schema = strictObject({ limit: id(), tags: yup.array(yup.string().required()) });
  const input = { limit: '7', tags: ['a', 'b'] };
  const first = (await validateText(schema, input, 'query')) as { limit: number; tags: string[] };
  t.deepEqual(first, { limit: 7, tags: ['a', 'b'] });
  first.tags.push('mutated');
  first.limit = 99;
  const second = (await validateText(schema, input, 'query')) as { limit: number; tags: string[] };
  t.deepEqual(second, { limit: 7, tags: ['a', 'b'] });
  t.not(second, first);
});

test('the text memo never keeps a failure: a bad value is refused every time with the same fields', async (t) => {
  const schema = strictObject({ productId: id().required() });
  for (let i = 0; i < 2; i++) {
    const err = t.throws(() => validateText(schema, { productId: 'abc' }, 'params'), {
      instanceOf: ValidationError,
    });
    t.deepEqual(err?.details?.errors, [
      { field: 'params.productId', message: 'productId must be a positive integer' },
    ]);
  }
});

test('the text memo stays bounded under a flood of distinct values and keeps answering right', async (t) => {
  const schema = strictObject({ productId: id().required() });
  for (let i = 1; i <= TEXT_MEMO_MAX_ENTRIES * 2 + 5; i++) {
    t.deepEqual(await validateText(schema, { productId: String(i) }, 'params'), { productId: i });
  }
  t.deepEqual(await validateText(schema, { productId: '1' }, 'params'), { productId: 1 });
});
