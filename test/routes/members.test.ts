import test from 'ava';
import { startTestApp, type TestApp } from '../helpers/harness';
import { assertError, ISO_MS } from '../helpers/assertions';
import { createMember, uniq, type TestMember, login } from '../helpers/factories';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

test('GET /members/me: the caller, in exactly the member JSON shape', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const res = await app.request('GET', '/api/v1/members/me', { token: seller.token });
  t.is(res.status, 200);
  const row = await app.db('members').where({ id: seller.id }).first();
  t.deepEqual(res.body, {
    id: seller.id,
    email: seller.email,
    name: 'Test SELLER',
    phone: '010-1234-5678',
    role: 'SELLER',
    businessNumber: '111-22-33333',
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  });
  t.regex(res.body.createdAt, ISO_MS);
});

test('GET /members/me with a token of a member that no longer exists: 401 INVALID_TOKEN', async (t) => {
  const ghost = await createMember(app);
  await app.db('members').where({ id: ghost.id }).delete();
  assertError(
    t,
    await app.request('GET', '/api/v1/members/me', { token: ghost.token }),
    401,
    'INVALID_TOKEN',
    '/api/v1/members/me',
  );
});

test('PATCH /members/me: name and phone change, updatedAt moves, other fields stay', async (t) => {
  const buyer = await createMember(app);
  const before = (await app.request('GET', '/api/v1/members/me', { token: buyer.token })).body;
  await new Promise((resolve) => setTimeout(resolve, 5));
  const res = await app.request('PATCH', '/api/v1/members/me', {
    token: buyer.token,
    body: { name: '  Renamed  ', phone: '+82 10 5555 6666' },
  });
  t.is(res.status, 200);
  t.deepEqual(res.body, {
    ...before,
    name: 'Renamed',
    phone: '+82 10 5555 6666',
    updatedAt: res.body.updatedAt,
  });
  t.true(Date.parse(res.body.updatedAt) > Date.parse(before.updatedAt));
  t.deepEqual((await app.request('GET', '/api/v1/members/me', { token: buyer.token })).body, res.body);
});

test('PATCH /members/me: an empty body changes nothing', async (t) => {
  const buyer = await createMember(app);
  const before = (await app.request('GET', '/api/v1/members/me', { token: buyer.token })).body;
  const res = await app.request('PATCH', '/api/v1/members/me', { token: buyer.token, body: {} });
  t.is(res.status, 200);
  t.deepEqual(res.body, before);
});

test('PATCH /members/me: a seller may change the business number, never blank it', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const ok = await app.request('PATCH', '/api/v1/members/me', {
    token: seller.token,
    body: { businessNumber: '999-88-77777' },
  });
  t.is(ok.status, 200);
  t.is(ok.body.businessNumber, '999-88-77777');
  for (const businessNumber of ['  ', null, '']) {
    const res = await app.request('PATCH', '/api/v1/members/me', {
      token: seller.token,
      body: { businessNumber },
    });
    assertError(t, res, 400, 'BUSINESS_NUMBER_REQUIRED', '/api/v1/members/me');
    t.deepEqual(res.body.errors, [
      { field: 'businessNumber', message: 'businessNumber must not be blank for sellers' },
    ]);
  }
  t.is((await app.db('members').where({ id: seller.id }).first()).business_number, '999-88-77777');
});

test('PATCH /members/me: a buyer or admin cannot set a business number', async (t) => {
  for (const role of ['BUYER', 'ADMIN'] as const) {
    const member = await createMember(app, role);
    const res = await app.request('PATCH', '/api/v1/members/me', {
      token: member.token,
      body: { businessNumber: '1' },
    });
    assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/members/me');
    t.deepEqual(res.body.errors, [
      { field: 'businessNumber', message: 'businessNumber is only for sellers' },
    ]);
  }
});

test('PATCH /members/me: role, email and id cannot be set (unknown fields)', async (t) => {
  const buyer = await createMember(app);
  const res = await app.request('PATCH', '/api/v1/members/me', {
    token: buyer.token,
    body: { role: 'ADMIN', email: 'x@example.test', id: 1 },
  });
  assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/members/me');
  t.deepEqual(res.body.errors.map((e: any) => e.field).sort(), ['email', 'id', 'role']);
  t.true(res.body.errors.every((e: any) => e.message === 'unknown field'));
  const row = await app.db('members').where({ id: buyer.id }).first();
  t.is(row.role, 'BUYER');
  t.is(row.email, buyer.email);
});

test('PATCH /members/me: field validation', async (t) => {
  const buyer = await createMember(app);
  const cases: Array<[Record<string, unknown>, string, string]> = [
    [{ name: '' }, 'name', 'name must not be blank'],
    [{ name: 42 }, 'name', 'name must be a string'],
    [{ phone: 'abc' }, 'phone', 'phone must be 7-30 characters of digits, spaces, +, -, ( or )'],
    [{ password: 'short', currentPassword: buyer.password }, 'password', 'password must be at least 8 bytes'],
    [{ password: 'New-password-1' }, 'currentPassword', 'currentPassword is required to change the password'],
    [{ currentPassword: buyer.password }, 'password', 'password is required with currentPassword'],
  ];
  for (const [body, field, message] of cases) {
    const res = await app.request('PATCH', '/api/v1/members/me', { token: buyer.token, body });
    assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/members/me');
    t.deepEqual(res.body.errors, [{ field, message }], JSON.stringify(body));
  }
});

test('password change with a wrong currentPassword: 400, nothing changes, sessions survive', async (t) => {
  const buyer = await createMember(app);
  const session = await login(app, buyer);
  const res = await app.request('PATCH', '/api/v1/members/me', {
    token: buyer.token,
    body: { password: 'New-password-1', currentPassword: 'not-the-password' },
  });
  assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/members/me');
  t.deepEqual(res.body.errors, [{ field: 'currentPassword', message: 'currentPassword is incorrect' }]);
  t.is((await login(app, buyer)).accessToken.length > 0, true);
  t.is(
    (await app.request('POST', '/api/v1/auth/refresh', { body: { refreshToken: session.refreshToken } }))
      .status,
    200,
  );
});

test('password change: 200, the old password stops working, the new one works, every refresh token is revoked', async (t) => {
  const buyer = await createMember(app);
  const sessionA = await login(app, buyer);
  const sessionB = await login(app, buyer);
  const res = await app.request('PATCH', '/api/v1/members/me', {
    token: sessionA.accessToken,
    body: { password: 'Brand-new-pass-2', currentPassword: buyer.password },
  });
  t.is(res.status, 200);
  t.is(res.body.id, buyer.id);
  // Revoked by the change itself (in its transaction), not only refused later by the version check: a refresh
  // token without the version claim (signed before it existed) has nothing else that stops it.
  t.is((await app.db('refresh_tokens').where({ member_id: buyer.id }).whereNull('revoked_at')).length, 0);
  for (const session of [sessionA, sessionB]) {
    const refresh = await app.request('POST', '/api/v1/auth/refresh', {
      body: { refreshToken: session.refreshToken },
    });
    assertError(t, refresh, 401, 'INVALID_TOKEN', '/api/v1/auth/refresh');
  }
  const old = await app.request('POST', '/api/v1/auth/login', {
    body: { email: buyer.email, password: buyer.password },
  });
  assertError(t, old, 401, 'INVALID_CREDENTIALS', '/api/v1/auth/login');
  const fresh = await app.request('POST', '/api/v1/auth/login', {
    body: { email: buyer.email, password: 'Brand-new-pass-2' },
  });
  t.is(fresh.status, 200);
  t.is(
    (await app.db('refresh_tokens').where({ member_id: buyer.id }).whereNull('revoked_at')).length,
    1, // only the session just opened with the new password
  );
});

// ---- role matrix: every member and auth endpoint, anonymous / buyer / seller / admin ----

type Caller = 'anonymous' | 'BUYER' | 'SELLER' | 'ADMIN';
const callers: Caller[] = ['anonymous', 'BUYER', 'SELLER', 'ADMIN'];

async function callerToken(caller: Caller): Promise<{ token?: string; member?: TestMember }> {
  if (caller === 'anonymous') return {};
  const member = await createMember(app, caller);
  return { token: member.token, member };
}

const matrix: Array<{
  method: string;
  path: string;
  expect: Record<Caller, number>;
  body?: (m?: TestMember) => Promise<unknown> | unknown;
}> = [
  {
    method: 'GET',
    path: '/api/v1/members/me',
    expect: { anonymous: 401, BUYER: 200, SELLER: 200, ADMIN: 200 },
  },
  {
    method: 'PATCH',
    path: '/api/v1/members/me',
    expect: { anonymous: 401, BUYER: 200, SELLER: 200, ADMIN: 200 },
    body: () => ({ name: 'Matrix' }),
  },
  {
    method: 'GET',
    path: '/api/v1/admin/members',
    expect: { anonymous: 401, BUYER: 403, SELLER: 403, ADMIN: 200 },
  },
  // Public endpoints: a valid token of any role changes nothing.
  {
    method: 'POST',
    path: '/api/v1/auth/signup',
    expect: { anonymous: 201, BUYER: 201, SELLER: 201, ADMIN: 201 },
    body: () => ({
      email: `m-${uniq()}@example.test`,
      password: 'Matrix-pass-1',
      name: 'M',
      phone: '0101234567',
      role: 'BUYER',
    }),
  },
  {
    method: 'POST',
    path: '/api/v1/auth/login',
    expect: { anonymous: 200, BUYER: 200, SELLER: 200, ADMIN: 200 },
    body: async () => {
      const m = await createMember(app);
      return { email: m.email, password: m.password };
    },
  },
  {
    method: 'POST',
    path: '/api/v1/auth/refresh',
    expect: { anonymous: 200, BUYER: 200, SELLER: 200, ADMIN: 200 },
    body: async () => ({ refreshToken: (await login(app, await createMember(app))).refreshToken }),
  },
  {
    method: 'POST',
    path: '/api/v1/auth/logout',
    expect: { anonymous: 204, BUYER: 204, SELLER: 204, ADMIN: 204 },
    body: async () => ({ refreshToken: (await login(app, await createMember(app))).refreshToken }),
  },
];

for (const row of matrix) {
  test(`role matrix: ${row.method} ${row.path}`, async (t) => {
    for (const caller of callers) {
      const { token, member } = await callerToken(caller);
      const body = row.body ? await row.body(member) : undefined;
      const res = await app.request(row.method, row.path, { token, body });
      const expected = row.expect[caller];
      t.is(res.status, expected, `${caller}: ${JSON.stringify(res.body)}`);
      if (expected === 401) assertError(t, res, 401, 'UNAUTHENTICATED', row.path);
      if (expected === 403) assertError(t, res, 403, 'FORBIDDEN', row.path);
      if (expected === 200 && row.path === '/api/v1/members/me') t.is(res.body.id, member!.id);
    }
  });
}

// ---- admin member list ----

test('GET /admin/members: page envelope, newest first, role and keyword filters', async (t) => {
  const admin = await createMember(app, 'ADMIN');
  const tag = uniq();
  const made: TestMember[] = [];
  for (let i = 0; i < 5; i++)
    made.push(
      await createMember(app, i % 2 ? 'SELLER' : 'BUYER', { email: `list-${tag}-${i}@example.test` }),
    );
  const res = await app.request('GET', `/api/v1/admin/members?keyword=${tag}&size=2`, { token: admin.token });
  t.is(res.status, 200);
  t.deepEqual(Object.keys(res.body).sort(), [
    'content',
    'hasNext',
    'page',
    'size',
    'totalElements',
    'totalPages',
  ]);
  t.like(res.body, { page: 0, size: 2, totalElements: 5, totalPages: 3, hasNext: true });
  t.deepEqual(
    res.body.content.map((m: any) => m.id),
    [made[4].id, made[3].id],
  );
  t.deepEqual(Object.keys(res.body.content[0]).sort(), [
    'businessNumber',
    'createdAt',
    'email',
    'id',
    'name',
    'phone',
    'role',
    'updatedAt',
  ]);
  t.regex(res.body.content[0].createdAt, ISO_MS);

  const last = await app.request('GET', `/api/v1/admin/members?keyword=${tag}&size=2&page=2`, {
    token: admin.token,
  });
  t.like(last.body, { page: 2, size: 2, totalElements: 5, totalPages: 3, hasNext: false });
  t.deepEqual(
    last.body.content.map((m: any) => m.id),
    [made[0].id],
  );
  const beyond = await app.request('GET', `/api/v1/admin/members?keyword=${tag}&page=9`, {
    token: admin.token,
  });
  t.deepEqual(beyond.body, {
    content: [],
    page: 9,
    size: 20,
    totalElements: 5,
    totalPages: 1,
    hasNext: false,
  });

  const sellers = await app.request('GET', `/api/v1/admin/members?keyword=${tag.toUpperCase()}&role=SELLER`, {
    token: admin.token,
  });
  t.is(sellers.status, 200);
  t.deepEqual(
    sellers.body.content.map((m: any) => m.id),
    [made[3].id, made[1].id],
  );
  t.true(sellers.body.content.every((m: any) => m.role === 'SELLER' && m.businessNumber === '111-22-33333'));
});

test('GET /admin/members: hasNext is false on the last page when the total is a multiple of the size', async (t) => {
  const admin = await createMember(app, 'ADMIN');
  const tag = uniq();
  for (let i = 0; i < 4; i++) await createMember(app, 'BUYER', { email: `page${i}-${tag}@example.test` });
  const page = async (n: number) => {
    const res = await app.request('GET', `/api/v1/admin/members?keyword=${tag}&size=2&page=${n}`, {
      token: admin.token,
    });
    t.is(res.status, 200);
    return res.body;
  };
  t.like(await page(0), { page: 0, size: 2, totalElements: 4, totalPages: 2, hasNext: true });
  t.like(await page(1), { page: 1, size: 2, totalElements: 4, totalPages: 2, hasNext: false });
  t.like(await page(2), { page: 2, totalElements: 4, totalPages: 2, hasNext: false, content: [] });
});

test('GET /admin/members: a non-ASCII name is found by its own spelling and by its lower case, as product names are', async (t) => {
  const admin = await createMember(app, 'ADMIN');
  const tag = uniq();
  const upper = await createMember(app, 'BUYER');
  await app
    .db('members')
    .where({ id: upper.id })
    .update({ name: `ÉMILE Ünal ${tag}` });
  const lower = await createMember(app, 'BUYER');
  await app
    .db('members')
    .where({ id: lower.id })
    .update({ name: `café noir ${tag}` });
  const found = async (keyword: string) => {
    const res = await app.request('GET', `/api/v1/admin/members?keyword=${encodeURIComponent(keyword)}`, {
      token: admin.token,
    });
    t.is(res.status, 200, keyword);
    return res.body.content.map((m: any) => m.id);
  };
  // Typed as stored, in mixed case and in lower case: both databases.
  t.deepEqual(await found(`ÉMILE Ünal ${tag}`), [upper.id]);
  t.deepEqual(await found(`Émile Ünal ${tag}`), [upper.id]);
  t.deepEqual(await found(`émile ünal ${tag}`), [upper.id]);
  t.deepEqual(await found(`CAFÉ NOIR ${tag}`), [lower.id]);
  t.deepEqual(await found(`café noir ${tag}`), [lower.id]);
  // Accents are letters of their own, as in the product search (MySQL compares utf8mb4_bin, not the collation).
  t.deepEqual(await found(`cafe noir ${tag}`), []);
});

test('GET /admin/members: keyword matches the name too, and % and _ only literally', async (t) => {
  const admin = await createMember(app, 'ADMIN');
  const tag = uniq();
  const plain = await createMember(app, 'BUYER', { email: `plain${tag}@example.test` });
  await app
    .db('members')
    .where({ id: plain.id })
    .update({ name: `Zed ${tag}ab` });
  const special = await createMember(app, 'BUYER', { email: `pct-${tag}@example.test` });
  await app
    .db('members')
    .where({ id: special.id })
    .update({ name: `Zed ${tag}a%_b!` });

  const byName = await app.request(
    'GET',
    `/api/v1/admin/members?keyword=${encodeURIComponent(`zed ${tag}`)}`,
    { token: admin.token },
  );
  t.deepEqual(
    byName.body.content.map((m: any) => m.id),
    [special.id, plain.id],
  );
  for (const keyword of [`${tag}a%`, `${tag}a%_`, `${tag}a%_b!`]) {
    const res = await app.request('GET', `/api/v1/admin/members?keyword=${encodeURIComponent(keyword)}`, {
      token: admin.token,
    });
    t.deepEqual(
      res.body.content.map((m: any) => m.id),
      [special.id],
      keyword,
    );
  }
  // `_` must not act as a one-character wildcard: "<tag>_b" matches nothing ("<tag>ab" exists).
  const underscore = await app.request(
    'GET',
    `/api/v1/admin/members?keyword=${encodeURIComponent(`${tag}_b`)}`,
    { token: admin.token },
  );
  t.is(underscore.body.totalElements, 0);
  const percent = await app.request(
    'GET',
    `/api/v1/admin/members?keyword=${encodeURIComponent('%')}&size=100`,
    { token: admin.token },
  );
  t.deepEqual(
    percent.body.content.map((m: any) => m.id),
    [special.id],
  );
});

test('GET /admin/members: bad paging and filters are 400 naming the parameter', async (t) => {
  const admin = await createMember(app, 'ADMIN');
  const cases: Array<[string, string, string]> = [
    ['size=0', 'query.size', 'size must be an integer between 1 and 100'],
    ['size=101', 'query.size', 'size must be an integer between 1 and 100'],
    ['size=abc', 'query.size', 'size must be an integer between 1 and 100'],
    ['page=-1', 'query.page', 'page must be an integer >= 0'],
    ['page=1.5', 'query.page', 'page must be an integer >= 0'],
    ['role=KING', 'query.role', 'role must be one of BUYER, SELLER, ADMIN'],
    ['sort=id', 'query.sort', 'unknown field'],
  ];
  for (const [qs, field, message] of cases) {
    const res = await app.request('GET', `/api/v1/admin/members?${qs}`, { token: admin.token });
    assertError(t, res, 400, 'VALIDATION_ERROR', '/api/v1/admin/members');
    t.deepEqual(res.body.errors, [{ field, message }], qs);
  }
  const max = await app.request('GET', '/api/v1/admin/members?size=100&page=0', { token: admin.token });
  t.is(max.status, 200);
  t.is(max.body.size, 100);
});

test('GET /admin/members never exposes password hashes', async (t) => {
  const admin = await createMember(app, 'ADMIN');
  const res = await app.request('GET', '/api/v1/admin/members?size=100', { token: admin.token });
  t.is(res.status, 200);
  t.false(/\$2[aby]\$/.test(res.text));
  t.false(res.text.toLowerCase().includes('password'));
});
