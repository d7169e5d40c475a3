// The response memo (lib/http/response-memo.ts) replays anonymous GETs of cached documents before Koa. A replay
// must be the pipeline's response byte for byte (but for the request id), keep every per-request contract
// (request id, access line, metrics, If-None-Match), never outlive its cache entry, and leave everything whose
// answer depends on more than the URL (Authorization, Origin) to Koa.
import http from 'node:http';
import net from 'node:net';
import test from 'ava';
import Koa from 'koa';
import { cachedDocument } from '../../lib/cached-document';
import { createGracefulServer } from '../../lib/graceful-server';
import { sendCachedDocument } from '../../lib/http/etag';
import { createResponseMemo } from '../../lib/http/response-memo';
import { createLogger } from '../../lib/logger';
import { LogCollector, request, startTestApp, type ApiResponse, type TestApp } from '../helpers/harness';
import { createCategory, createMember, createProduct, type TestMember } from '../helpers/factories';

let app: TestApp;
let seller: TestMember;
let admin: TestMember;
let categoryId: number;
test.before(async () => {
  app = await startTestApp({ logLevel: 'info' });
  [seller, admin] = await Promise.all([createMember(app, 'SELLER'), createMember(app, 'ADMIN')]);
  categoryId = await createCategory(app);
});
test.after.always(async () => {
  await app?.close();
});

const replays = () => app.bundle.responseMemo.stats().replays;

/** GET that reports whether the memo answered it (the memo counts its replays; tests here run serially). */
async function get(path: string, headers: Record<string, string> = {}, token?: string) {
  const before = replays();
  const res = await app.request('GET', path, { headers, token });
  return { res, replayed: replays() > before };
}

/** Every header but the per-request ones (X-Request-Id; Date is Node's). */
function stableHeaders(res: ApiResponse): Record<string, string> {
  const out: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (name !== 'x-request-id' && name !== 'date') out[name] = value;
  });
  return out;
}

test.serial(
  'a replay is the pipeline response (status, headers, body bytes) on each cached route, 200 and 304',
  async (t) => {
    const productId = await createProduct(app, seller.id, { categoryId });
    // A HEAD (answered by the pipeline, never recorded) learns each document's ETag, so the path's first GET with
    // it is a 304 from the pipeline (only 200s are recorded), then its 200 from the pipeline, then both replayed.
    const paths = [
      '/api/v1/categories',
      '/api/v1/products/popular',
      '/api/v1/products/popular?limit=03',
      `/api/v1/products/${productId}`,
    ];
    for (const path of paths) {
      const etag = (await app.request('HEAD', path)).headers.get('etag')!;
      t.truthy(etag, path);
      const piped304 = await get(path, { 'If-None-Match': etag });
      const piped = await get(path);
      const replayed = await get(path);
      const replayed304 = await get(path, { 'If-None-Match': etag });
      t.deepEqual(
        [piped304.replayed, piped.replayed, replayed.replayed, replayed304.replayed],
        [false, false, true, true],
        path,
      );
      t.is(piped.res.status, 200);
      t.is(replayed.res.status, 200);
      t.deepEqual(stableHeaders(replayed.res), stableHeaders(piped.res), path);
      t.is(replayed.res.text, piped.res.text, path);
      t.is(replayed.res.headers.get('etag'), etag);
      t.is(replayed.res.headers.get('x-content-type-options'), 'nosniff');
      t.is(replayed.res.headers.get('vary'), 'Origin');
      t.is(piped304.res.status, 304);
      t.is(replayed304.res.status, 304);
      t.deepEqual(stableHeaders(replayed304.res), stableHeaders(piped304.res), path);
      t.is(replayed304.res.text, '');
    }
  },
);

test.serial(
  'If-None-Match: a matching tag (in a list, weak, or *) is a 304; a stale one a 200 with the body',
  async (t) => {
    const path = '/api/v1/categories';
    await get(path);
    const first = await get(path);
    t.true(first.replayed);
    const etag = first.res.headers.get('etag')!;
    for (const header of [etag, `"other", W/${etag}`, '*']) {
      const res = await get(path, { 'If-None-Match': header });
      t.true(res.replayed);
      t.is(res.res.status, 304, header);
    }
    const stale = await get(path, { 'If-None-Match': '"stale-tag"' });
    t.true(stale.replayed);
    t.is(stale.res.status, 200);
    t.is(stale.res.text, first.res.text);
  },
);

test.serial(
  'a seller edit, a status change to DRAFT and a delete show on the very next anonymous GET',
  async (t) => {
    const productId = await createProduct(app, seller.id, { categoryId, price: '10.00' });
    const path = `/api/v1/products/${productId}`;
    await get(path);
    const warm = await get(path);
    t.true(warm.replayed);
    t.is(warm.res.body.price, 10);

    const edited = await app.request('PATCH', path, { token: seller.token, body: { price: 12 } });
    t.is(edited.status, 200);
    const afterEdit = await get(path, { 'If-None-Match': warm.res.headers.get('etag')! });
    t.false(afterEdit.replayed);
    t.is(afterEdit.res.status, 200);
    t.is(afterEdit.res.body.price, 12);
    const next = await get(path);
    t.true(next.replayed, 'the new document is replayed');
    t.is(next.res.body.price, 12);

    t.is((await app.request('PATCH', path, { token: seller.token, body: { status: 'DRAFT' } })).status, 200);
    const draft = await get(path);
    t.false(draft.replayed);
    t.is(draft.res.status, 404);
    t.like(draft.res.body, { code: 'NOT_FOUND' });

    t.is(
      (await app.request('PATCH', path, { token: seller.token, body: { status: 'ON_SALE' } })).status,
      200,
    );
    t.is((await get(path)).res.status, 200);
    t.true((await get(path)).replayed);
    t.is((await app.request('DELETE', path, { token: seller.token })).status, 204);
    const deleted = await get(path);
    t.false(deleted.replayed);
    t.is(deleted.res.status, 404);
  },
);

test.serial('an order taking stock ends the replay of the product detail and of popular', async (t) => {
  const buyer = await createMember(app, 'BUYER');
  const productId = await createProduct(app, seller.id, { categoryId, stockQuantity: 5 });
  const path = `/api/v1/products/${productId}`;
  for (const target of [path, '/api/v1/products/popular?limit=50']) {
    await get(target);
    t.true((await get(target)).replayed, target);
  }
  const ordered = await app.request('POST', '/api/v1/orders', {
    token: buyer.token,
    body: {
      orderItems: [{ productId, quantity: 2 }],
      shippingAddress: {
        zipCode: '04524',
        address: '1 Market Street',
        addressDetail: '',
        receiverName: 'Kim Buyer',
        receiverPhone: '010-0000-0000',
      },
    },
  });
  t.is(ordered.status, 201);
  const detail = await get(path);
  t.false(detail.replayed);
  t.like(detail.res.body, { stockQuantity: 3, salesCount: 2 });
  t.false((await get('/api/v1/products/popular?limit=50')).replayed);
  t.true((await get(path)).replayed, 'the new document is replayed');
});

test.serial('a new category and a cachesStale event end the replay of the list', async (t) => {
  const path = '/api/v1/categories';
  await get(path);
  t.true((await get(path)).replayed);
  const created = await app.request('POST', '/api/v1/admin/categories', {
    token: admin.token,
    body: { name: `memo-${Date.now()}`, displayOrder: 1 },
  });
  t.is(created.status, 201);
  const after = await get(path);
  t.false(after.replayed);
  t.true((after.res.body as Array<{ id: number }>).some((c) => c.id === created.body.id));
  t.true((await get(path)).replayed);

  await app.bundle.services.events.emit('cachesStale');
  t.false((await get(path)).replayed);
});

test.serial('Authorization, Origin and HEAD requests go through Koa (viewer, CORS)', async (t) => {
  const path = '/api/v1/categories';
  await get(path);
  t.true((await get(path)).replayed);
  const authed = await get(path, {}, seller.token);
  t.false(authed.replayed);
  t.is(authed.res.status, 200);
  const badToken = await get(path, { Authorization: 'Bearer not-a-token' });
  t.false(badToken.replayed);
  t.is(badToken.res.status, 401);
  const cors = await get(path, { Origin: 'http://localhost:3000' });
  t.false(cors.replayed);
  t.is(cors.res.headers.get('access-control-allow-origin'), 'http://localhost:3000');
  const before = replays();
  const head = await app.request('HEAD', path);
  t.is(head.status, 200);
  t.is(replays(), before);
});

test.serial(
  'a replay echoes a valid X-Request-Id, replaces an invalid one, and writes the access line',
  async (t) => {
    const path = '/api/v1/categories';
    await get(path);
    const echoed = await get(path, { 'X-Request-Id': 'memo-req.1_A' });
    t.true(echoed.replayed);
    t.is(echoed.res.headers.get('x-request-id'), 'memo-req.1_A');
    const replaced = await get(path, { 'X-Request-Id': 'not valid!' });
    t.true(replaced.replayed);
    t.regex(
      replaced.res.headers.get('x-request-id')!,
      /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
    const generated = await get(path);
    t.not(generated.res.headers.get('x-request-id'), replaced.res.headers.get('x-request-id'));

    const lines = app.logs.lines.filter((line) => line.includes('memo-req.1_A'));
    t.is(lines.length, 1, app.logs.text);
    t.regex(lines[0], /HttpLogger/);
    t.regex(lines[0], /GET \/api\/v1\/categories 200 \d+\.\dms/);
    t.true(app.logs.lines.some((line) => line.includes(replaced.res.headers.get('x-request-id')!)));
  },
);

test.serial(
  'replays are observed in the request metrics under their route template and status',
  async (t) => {
    const path = '/api/v1/products/popular?limit=7';
    const count = async (status: string) => {
      const text = (await app.request('GET', '/metrics')).text;
      const line = text
        .split('\n')
        .find(
          (l) =>
            l.startsWith('http_request_duration_seconds_count{') &&
            l.includes('method="GET"') &&
            l.includes('route="/api/v1/products/popular"') &&
            l.includes(`status="${status}"`),
        );
      return line ? Number(line.split(' ').pop()) : 0;
    };
    const etag = (await get(path)).res.headers.get('etag')!;
    const [ok, notModified] = [await count('200'), await count('304')];
    t.true((await get(path)).replayed);
    t.true((await get(path)).replayed);
    t.true((await get(path, { 'If-None-Match': etag })).replayed);
    t.is(await count('200'), ok + 2);
    t.is(await count('304'), notModified + 1);
  },
);

test.serial(
  'an error in the fast path falls back to Koa (never a 500); the memo stays bounded, least recently used out',
  async (t) => {
    const observed: string[] = [];
    const memo = createResponseMemo({
      logger: createLogger({ level: 'fatal', format: 'line', out: new LogCollector() }),
      observe: (method, route, status) => observed.push(`${method} ${route} ${status}`),
      maxEntries: 2,
    });
    let failing = false;
    let served = 0;
    const koa = new Koa();
    koa.use(memo.record);
    koa.use((ctx) => {
      served++;
      (ctx as { routerPath?: string }).routerPath = '/doc/:n';
      const document = cachedDocument({ path: ctx.path }, () => {
        if (failing) throw new Error('validity check failed');
        return true;
      });
      sendCachedDocument(ctx, document, { scope: 'public' });
    });
    const server = http.createServer(memo.listener(koa.callback())).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      for (const n of [1, 1, 2, 3, 3]) t.is((await request(base, 'GET', `/doc/${n}`)).status, 200);
      t.is(served, 3, 'the second /doc/1 and /doc/3 were replays');
      t.like(memo.stats(), { entries: 2, replays: 2 });
      t.deepEqual(observed, ['GET /doc/:n 200', 'GET /doc/:n 200']);
      t.is((await request(base, 'GET', '/doc/1')).status, 200);
      t.is(served, 4, '/doc/1 was the oldest entry and was dropped');
      // a replay makes its entry the most recently used: /doc/1, not /doc/3, goes when /doc/5 comes
      for (const n of [3, 5, 3]) t.is((await request(base, 'GET', `/doc/${n}`)).status, 200);
      t.is(served, 5, 'both /doc/3 were replays');
      t.like(memo.stats(), { entries: 2, replays: 4 });

      failing = true;
      const res = await request(base, 'GET', '/doc/3');
      t.is(res.status, 200);
      t.deepEqual(res.body, { path: '/doc/3' });
      t.is(served, 6, 'Koa answered');
      t.is(memo.stats().replays, 4);
    } finally {
      server.close();
    }
  },
);

test.serial(
  'the memo holds at most maxBytes of bodies: many spellings of one big document do not each keep a copy',
  async (t) => {
    const memo = createResponseMemo({
      logger: createLogger({ level: 'fatal', format: 'line', out: new LogCollector() }),
      observe: () => undefined,
      maxBytes: 100_000,
    });
    const big = { text: 'x'.repeat(30_000) };
    const koa = new Koa();
    koa.use(memo.record);
    koa.use((ctx) => {
      (ctx as { routerPath?: string }).routerPath = '/doc';
      sendCachedDocument(
        ctx,
        cachedDocument(ctx.path === '/doc' ? big : { text: 'x'.repeat(200_000) }, () => true),
        {
          scope: 'public',
        },
      );
    });
    const server = http.createServer(memo.listener(koa.callback())).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      // Ten spellings of one URL (a query the route ignores): only three 30 kB copies fit in 100 kB.
      for (let n = 0; n < 10; n++) t.is((await request(base, 'GET', `/doc?v=${n}`)).status, 200);
      t.like(memo.stats(), { entries: 3 });
      t.true(memo.stats().bytes <= 100_000, `${memo.stats().bytes} bytes`);
      t.true(memo.stats().bytes > 90_000);
      // The most recent spellings are the ones kept: they replay.
      const before = memo.stats().replays;
      t.is((await request(base, 'GET', '/doc?v=9')).status, 200);
      t.is(memo.stats().replays, before + 1);
      // A body larger than the whole bound is answered and never kept.
      t.is((await request(base, 'GET', '/huge')).status, 200);
      t.is((await request(base, 'GET', '/huge')).status, 200);
      t.is(memo.stats().replays, before + 1);
      t.like(memo.stats(), { entries: 3 });
    } finally {
      server.close();
    }
  },
);

/** Sends one request on an open keep-alive socket and resolves with the raw response (its body ends in `}`). */
function exchange(socket: net.Socket, path: string): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (text.endsWith('}')) {
        socket.off('data', onData);
        resolve(text);
      }
    };
    socket.on('data', onData);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  });
}

test.serial("a replay during a drain carries Connection: close, as the pipeline's answers do", async (t) => {
  const memo = createResponseMemo({
    logger: createLogger({ level: 'fatal', format: 'line', out: new LogCollector() }),
    observe: () => undefined,
  });
  const koa = new Koa();
  koa.use(memo.record);
  koa.use((ctx) => {
    (ctx as { routerPath?: string }).routerPath = '/doc';
    sendCachedDocument(
      ctx,
      cachedDocument({ ok: true }, () => true),
      { scope: 'public' },
    );
  });
  const graceful = createGracefulServer(memo.listener(koa.callback()), {
    requestTimeoutMs: 5_000,
    headersTimeoutMs: 5_000,
    keepAliveTimeoutMs: 5_000,
    maxConnections: 10,
  });
  graceful.server.listen(0, '127.0.0.1');
  await new Promise((resolve) => graceful.server.once('listening', resolve));
  const socket = net.connect((graceful.server.address() as net.AddressInfo).port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  try {
    t.regex(await exchange(socket, '/doc'), /^HTTP\/1\.1 200/);
    const warm = await exchange(socket, '/doc');
    t.is(memo.stats().replays, 1);
    t.notRegex(warm, /connection: close/i);

    const drained = graceful.drain(5_000);
    const during = await exchange(socket, '/doc');
    t.is(memo.stats().replays, 2, 'answered by the memo');
    t.regex(during, /^HTTP\/1\.1 200/);
    t.regex(during, /\r\nconnection: close\r\n/i);
    await drained;
  } finally {
    socket.destroy();
  }
});
