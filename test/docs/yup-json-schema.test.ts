// The yup -> JSON Schema conversion, the router-path conversion and the small JSON Schema checker.
import test from 'ava';
import * as yup from 'yup';
import { id, strictObject } from '../../lib/http/validate';
import { checkJsonSchema } from '../../lib/openapi/json-schema-check';
import { expandOptionalGroups, operationId, pathParamNames, toOpenApiPath } from '../../lib/openapi/openapi-paths';
import { yupToJsonSchema } from '../../lib/openapi/yup-json-schema';

test('a strict object with the common yup rules becomes the matching JSON Schema', (t) => {
  const schema = strictObject({
    productId: id().required(),
    name: yup.string().trim().min(2).max(10).required(),
    email: yup.string().email().max(255),
    status: yup.string().oneOf(['DRAFT', 'ON_SALE']).default('ON_SALE'),
    note: yup.string().nullable(),
    price: yup.number().moreThan(0).lessThan(1000),
    phone: yup.string().matches(/^[0-9-]+$/),
    tags: yup.array(yup.string().required()).min(1).max(3).required(),
    address: yup.object({ zipCode: yup.string().length(5).required() }).required(),
    flag: yup.boolean(),
    at: yup.date(),
  });
  t.deepEqual(yupToJsonSchema(schema), {
    type: 'object',
    additionalProperties: false,
    properties: {
      productId: { type: 'integer', minimum: 1, maximum: 2_147_483_647 },
      name: { type: 'string', minLength: 2, maxLength: 10 },
      email: { type: 'string', format: 'email', maxLength: 255 },
      status: { type: 'string', enum: ['DRAFT', 'ON_SALE'], default: 'ON_SALE' },
      note: { type: ['string', 'null'] },
      price: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1000 },
      phone: { type: 'string', pattern: '^[0-9-]+$' },
      tags: { type: 'array', minItems: 1, maxItems: 3, items: { type: 'string', minLength: 1 } },
      address: {
        type: 'object',
        properties: { zipCode: { type: 'string', minLength: 5, maxLength: 5 } },
        required: ['zipCode'],
      },
      flag: { type: 'boolean' },
      at: { type: 'string', format: 'date-time' },
    },
    required: ['productId', 'name', 'tags', 'address'],
  });
});

test('nullable enums allow null, labels and meta become title, description and examples', (t) => {
  const schema = yup
    .string()
    .oneOf(['A', 'B'])
    .nullable()
    .label('Kind')
    .meta({ description: 'the kind', example: 'A' });
  t.deepEqual(yupToJsonSchema(schema), {
    type: ['string', 'null'],
    enum: ['A', 'B', null],
    title: 'Kind',
    description: 'the kind',
    examples: ['A'],
  });
});

test('the converted schema accepts what yup accepts and rejects what yup rejects', async (t) => {
  const schema = strictObject({
    quantity: yup.number().integer().min(1).max(1000).required(),
    name: yup.string().max(5).required(),
  });
  const json = yupToJsonSchema(schema);
  const cases: unknown[] = [
    { quantity: 3, name: 'abc' },
    { quantity: 0, name: 'abc' },
    { quantity: 1.5, name: 'abc' },
    { quantity: 3, name: 'abcdef' },
    { quantity: 3 },
    { quantity: 3, name: 'a', extra: true },
  ];
  for (const value of cases) {
    const yupOk = await schema.strict(true).isValid(value);
    t.is(checkJsonSchema(json, value).length === 0, yupOk, JSON.stringify(value));
  }
});

test('router paths become OpenAPI paths; optional groups become one path each', (t) => {
  t.is(toOpenApiPath('/api/v1/orders/:orderId/cancel'), '/api/v1/orders/{orderId}/cancel');
  t.is(toOpenApiPath('/files/*splat'), '/files/{splat}');
  t.deepEqual(expandOptionalGroups('/a{/:b}'), ['/a/:b', '/a']);
  t.deepEqual(expandOptionalGroups('/a{/:b}{/:c}'), ['/a/:b/:c', '/a/:c', '/a/:b', '/a']);
  t.deepEqual(pathParamNames('/products/:productId/images/:imageId'), ['productId', 'imageId']);
  t.is(operationId('post', '/api/v1/orders/{orderId}/cancel'), 'postOrdersByOrderIdCancel');
  t.is(operationId('get', '/health/live'), 'getHealthLive');
  t.is(operationId('get', '/api/v1/openapi.json'), 'getOpenapiJson');
});

test('the checker reports each violation with its place', (t) => {
  const root = {
    components: {
      schemas: {
        Item: { type: 'object', required: ['id'], properties: { id: { type: 'integer', minimum: 1 } } },
      },
    },
  };
  const schema = {
    type: 'object',
    required: ['items', 'at'],
    additionalProperties: false,
    properties: {
      items: { type: 'array', items: { $ref: '#/components/schemas/Item' } },
      at: { type: 'string', format: 'date-time' },
      kind: { const: 'X' },
    },
  };
  t.deepEqual(checkJsonSchema(schema, { items: [{ id: 1 }], at: '2026-11-22T10:41:14.123Z', kind: 'X' }, { root }), []);
  t.deepEqual(checkJsonSchema(schema, { items: [{ id: 0 }, {}], at: 'yesterday', kind: 'Y', more: 1 }, { root }), [
    '$.items[0].id: 0 < minimum 1',
    '$.items[1]: missing required property "id"',
    '$.at: not a date-time',
    '$.kind: expected "X"',
    '$: unexpected property "more"',
  ]);
  t.deepEqual(checkJsonSchema({ type: ['integer', 'null'] }, 'x'), ['$: expected integer or null, got string']);
  t.throws(() => checkJsonSchema({ type: 'string', contentEncoding: 'base64' }, 'x'), {
    message: /Unsupported JSON Schema keyword "contentEncoding"/,
  });
});

test('the checker compares money with multipleOf 0.01 without binary-float false alarms', (t) => {
  const money = { type: 'number', minimum: 0, multipleOf: 0.01 };
  for (const ok of [0, 19.99, 1998.99, 0.1 + 0.2, 99999999.99]) t.deepEqual(checkJsonSchema(money, ok), [], String(ok));
  t.deepEqual(checkJsonSchema(money, 19.999), ['$: 19.999 is not a multiple of 0.01']);
  t.deepEqual(checkJsonSchema({ type: 'array', uniqueItems: true }, [1, 1]), ['$: items are not unique']);
});
