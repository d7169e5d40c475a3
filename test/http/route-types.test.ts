// A route's `auth` decides the handler's type of `auth` (public: the caller may be null; 'any' or roles: an
// AuthMember), and validated params, query and headers arrive with their schemas' types. The `@ts-expect-error`
// lines are checked by `npm run build`; the requests check what the handlers receive at run time.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import test from 'ava';
import Koa from 'koa';
import * as yup from 'yup';
import { createTokenService } from '../../lib/auth/tokens';
import { errorHandler } from '../../lib/http/error-handler';
import { defineRoute, mountRoutes } from '../../lib/http/route';
import { id, strictObject } from '../../lib/http/validate';
import { createLogger } from '../../lib/logger';
import { request, testConfig } from '../helpers/harness';

// No member table here: every verified token's claims are taken as they are (the version check is tested in
// test/routes/auth-member-version.test.ts).
const tokens = createTokenService(testConfig().jwt, async ({ id, role }) => ({ id, role }));
const seen: unknown[] = [];

const routes = [
  defineRoute({
    method: 'get',
    path: '/public/:n',
    summary: 'public',
    tags: ['Test'],
    auth: 'public',
    params: strictObject({ n: id().required() }),
    query: strictObject({
      q: yup
        .string()
        .oneOf(['a', 'b'] as const)
        .default('a'),
    }),
    headers: strictObject({ 'X-Flag': yup.string().oneOf(['on', 'off'] as const) }),
    responses: {},
    handler: ({ auth, params, query, headers }, ctx) => {
      // Never called: only the type checker reads it.
      // @ts-expect-error a public route's caller may be null
      const unchecked = (): number => auth.id;
      void unchecked;
      const n: number = params.n;
      const q: 'a' | 'b' = query.q;
      const flag: 'on' | 'off' | undefined = headers['X-Flag'];
      seen.push({ auth, n, q, flag });
      ctx.body = { caller: auth?.id ?? null };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/any',
    summary: 'any',
    tags: ['Test'],
    auth: 'any',
    responses: {},
    handler: ({ auth }, ctx) => {
      const callerId: number = auth.id;
      ctx.body = { caller: callerId };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/sellers',
    summary: 'roles',
    tags: ['Test'],
    auth: ['SELLER'],
    responses: {},
    handler: ({ auth }, ctx) => {
      ctx.body = { caller: auth.id, role: auth.role };
    },
  }),
];

let server: http.Server;
let base: string;
test.before(async () => {
  const router = new Router();
  mountRoutes(router, '', routes, tokens);
  const app = new Koa();
  app.use(errorHandler(createLogger({ level: 'fatal', format: 'line' })));
  app.use(router.routes());
  server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
test.after.always(() => new Promise<void>((resolve) => server.close(() => resolve())));

const seller = tokens.signAccessToken({ id: 7, role: 'SELLER', tokenVersion: 0 });
const buyer = tokens.signAccessToken({ id: 8, role: 'BUYER', tokenVersion: 0 });

test('a public route runs with a null caller, or the caller of a valid token', async (t) => {
  seen.length = 0;
  const anonymous = await request(base, 'GET', '/public/3', { headers: { 'X-Flag': 'on' } });
  t.is(anonymous.status, 200);
  t.deepEqual(anonymous.body, { caller: null });
  const known = await request(base, 'GET', '/public/4?q=b', { token: seller });
  t.deepEqual(known.body, { caller: 7 });
  t.deepEqual(seen, [
    { auth: null, n: 3, q: 'a', flag: 'on' },
    { auth: { id: 7, role: 'SELLER' }, n: 4, q: 'b', flag: undefined },
  ]);
});

test('a bad declared header is a 400 naming headers.<Name>; undeclared headers are ignored', async (t) => {
  const res = await request(base, 'GET', '/public/3', { headers: { 'X-Flag': 'maybe', 'X-Other': '!' } });
  t.is(res.status, 400);
  t.is(res.body.message, 'Invalid request headers');
  t.deepEqual(res.body.errors, [
    { field: 'headers.X-Flag', message: 'X-Flag must be one of the following values: on, off' },
  ]);
});

test("'any' and role routes never reach the handler without a caller", async (t) => {
  t.is((await request(base, 'GET', '/any')).status, 401);
  t.deepEqual((await request(base, 'GET', '/any', { token: buyer })).body, { caller: 8 });
  t.is((await request(base, 'GET', '/sellers')).status, 401);
  t.is((await request(base, 'GET', '/sellers', { token: buyer })).status, 403);
  t.deepEqual((await request(base, 'GET', '/sellers', { token: seller })).body, {
    caller: 7,
    role: 'SELLER',
  });
});
