// The yup -> JSON Schema conversion (checked with stock ajv) and the router-path conversion.
import test from 'ava';
import * as yup from 'yup';
import { id, strictObject } from '../../lib/http/validate';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { expandOptionalGroups, operationId, pathParamNames, toOpenApiPath } from '../../lib/openapi/openapi-paths';
import { ComponentRegistry, describeYup, yupToJsonSchema } from '../../lib/openapi/yup-json-schema';
import { productShape } from '../../lib/products/product-schemas';

const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as typeof addFormatsModule;

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
  const validate = new Ajv2020({ strict: true }).compile(yupToJsonSchema(schema));
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
    t.is(validate(value), yupOk, JSON.stringify(value));
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

test('named shapes become components referenced by $ref; a discriminated union carries its mapping', (t) => {
  const a = yup.object({ type: yup.string().oneOf(['A'] as const).defined(), n: yup.number().integer().defined() }).meta({ component: 'A' });
  const b = yup.object({ type: yup.string().oneOf(['B'] as const).defined() }).meta({ component: 'B' });
  const union = yup.mixed().defined().meta({ component: 'AorB', oneOf: [a, b], discriminator: 'type' });
  const registry = new ComponentRegistry();
  t.deepEqual(yupToJsonSchema(yup.object({ item: union, list: yup.array(a).defined() }), registry), {
    type: 'object',
    properties: {
      item: { $ref: '#/components/schemas/AorB' },
      list: { type: 'array', items: { $ref: '#/components/schemas/A' } },
    },
    required: ['item', 'list'],
  });
  t.deepEqual(registry.schemas.AorB, {
    oneOf: [{ $ref: '#/components/schemas/A' }, { $ref: '#/components/schemas/B' }],
    discriminator: { propertyName: 'type', mapping: { A: '#/components/schemas/A', B: '#/components/schemas/B' } },
  });
  t.deepEqual(registry.schemas.A, {
    type: 'object',
    properties: { type: { type: 'string', const: 'A' }, n: { type: 'integer' } },
    required: ['type', 'n'],
  });
  // One name, one definition.
  t.throws(() => yupToJsonSchema(yup.object({ x: yup.string() }).meta({ component: 'A' }), registry), {
    message: /Two different schemas are both named "A"/,
  });
});

test('meta carries what custom tests enforce; a case-insensitive pattern is spelled out', (t) => {
  const schema = yup
    .string()
    .test('bytes', 'x', () => true)
    .matches(/^(price|id)(,(asc|desc))?$/i)
    .meta({ description: '8-72 bytes', jsonSchema: { minLength: 2, maxLength: 72 } });
  const json = yupToJsonSchema(schema);
  t.like(json, { type: 'string', description: '8-72 bytes', minLength: 2, maxLength: 72 });
  const ajv = new Ajv2020({ strict: true });
  const validate = ajv.compile(json);
  for (const ok of ['price', 'PRICE,Desc', 'id,asc']) t.true(validate(ok), ok);
  for (const bad of ['pricey', 'id,up']) t.false(validate(bad), bad);
});

test('money with 2 decimals passes stock ajv against the Product shape (no multipleOf 0.01)', (t) => {
  const registry = new ComponentRegistry();
  yupToJsonSchema(productShape, registry);
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true });
  addFormats(ajv);
  ajv.addSchema({ $id: 'doc', $defs: JSON.parse(JSON.stringify(registry.schemas).replaceAll('#/components/schemas/', 'doc#/$defs/')) });
  const validate = ajv.getSchema('doc#/$defs/Product')!;
  const product = { ...(describeYup(productShape).meta?.example as object), price: 19.99 };
  t.true(validate(product), JSON.stringify(validate.errors));
  t.false(validate({ ...product, price: -1 }));
  t.false(validate({ ...product, extra: 1 }));
});
