// GET /metrics: scraped from a real server after real requests (an order placed, one refused, a cache miss
// then hit, an unknown route); and the production rule: loopback or METRICS_TOKEN, nothing else.
import test from 'ava';
import { assertError } from '../helpers/assertions';
import { startTestApp, type TestApp } from '../helpers/harness';
import { eventually, placeOrder, world } from '../orders/order-fixtures';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (one sample a line; HELP/TYPE comments skipped). */
function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1]] = pair[2];
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample named `name` whose labels include `labels`; undefined when there is none. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value),
  );
  if (found.length > 1) throw new Error(`${found.length} samples match ${name} ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

async function scrape(app: TestApp, headers?: Record<string, string>) {
  const res = await app.request('GET', '/metrics', { headers });
  return { res, samples: res.status === 200 ? parseSamples(res.text) : [] };
}

let app: TestApp;
let production: TestApp;
const METRICS_TOKEN = 'scrape-token-0123456789abcdef';

test.before(async () => {
  app = await startTestApp();
  // A second app in the same process: its own registry, nothing shared with the first.
  production = await startTestApp({
    env: {
      NODE_ENV: 'production',
      JWT_SECRET: 'a-production-secret-of-at-least-32-characters',
      BCRYPT_COST: '10',
      TRUST_PROXY: 'true',
      METRICS_TOKEN,
    },
  });
});
test.after.always(async () => {
  await app?.close();
  await production?.close();
});

test.serial(
  'after real requests the scrape reports orders, refusals, caches, actors, batches, routes',
  async (t) => {
    const { buyer, product } = await world(app);
    const plenty = await product({ stockQuantity: 10 });
    const scarce = await product({ stockQuantity: 1 });

    const placed = await placeOrder(app, buyer.token, [{ productId: plenty, quantity: 2 }]);
    t.is(placed.status, 201, placed.text);
    const refused = await placeOrder(app, buyer.token, [{ productId: scarce, quantity: 5 }]);
    assertError(t, refused, 409, 'INSUFFICIENT_STOCK');
    // The first read fills the product cache, the second is served from it.
    const first = await app.request('GET', `/api/v1/products/${plenty}`);
    const second = await app.request('GET', `/api/v1/products/${plenty}`);
    t.is(first.status, 200);
    t.is(second.status, 200);
    t.is(second.body.stockQuantity, 8);
    assertError(t, await app.request('GET', '/api/v1/no-such-thing/42'), 404, 'NOT_FOUND');

    // The order's notification is delivered; one more row waits for a retry in an hour: pending is exactly 1.
    await eventually(async () => {
      const row = await app.db('notification_outbox').whereNull('delivered_at').count({ n: '*' }).first();
      return Number(row!.n) === 0;
    });
    const now = new Date();
    await app.db('notification_outbox').insert({
      event_type: 'OrderCreated',
      recipient_id: buyer.id,
      payload: JSON.stringify({ sellerId: buyer.id, orderId: 0, orderNumber: 'TEST' }),
      request_id: null,
      attempts: 1,
      next_attempt_at: new Date(now.getTime() + 3_600_000),
      created_at: now,
    });

    const { res, samples } = await scrape(app);
    t.is(res.status, 200);
    t.is(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    t.is(res.headers.get('cache-control'), 'no-store');

    t.is(valueOf(samples, 'marketplace_orders_placed_total'), 1);
    t.is(valueOf(samples, 'marketplace_order_refusals_total', { reason: 'INSUFFICIENT_STOCK' }), 1);
    t.is(
      valueOf(samples, 'marketplace_cache_requests_total', { cache: 'product_detail', result: 'miss' }),
      1,
    );
    t.is(valueOf(samples, 'marketplace_cache_requests_total', { cache: 'product_detail', result: 'hit' }), 1);
    // The buyer's two authenticated requests: the first loads the member, the second finds it cached.
    t.is(
      valueOf(samples, 'marketplace_cache_requests_total', { cache: 'member_versions', result: 'miss' }),
      1,
    );
    t.is(
      valueOf(samples, 'marketplace_cache_requests_total', { cache: 'member_versions', result: 'hit' }),
      1,
    );
    t.is(valueOf(samples, 'marketplace_stock_actors_active'), 2);
    t.is(valueOf(samples, 'marketplace_group_commit_batch_size_count'), 1);
    t.is(valueOf(samples, 'marketplace_group_commit_batch_size_sum'), 1);
    t.is(valueOf(samples, 'marketplace_group_commit_batch_size_bucket', { le: '1' }), 1);
    t.is(valueOf(samples, 'marketplace_outbox_pending'), 1);

    const count = (method: string, route: string, status: string) =>
      valueOf(samples, 'http_request_duration_seconds_count', { method, route, status });
    t.is(count('POST', '/api/v1/orders', '201'), 1);
    t.is(count('POST', '/api/v1/orders', '409'), 1);
    t.is(count('GET', '/api/v1/products/:productId', '200'), 2);
    t.is(count('GET', 'unmatched', '404'), 1);
    t.is(
      valueOf(samples, 'http_request_duration_seconds_bucket', {
        route: '/api/v1/orders',
        status: '201',
        le: '+Inf',
      }),
      1,
    );
    // Route templates only: no raw URL (with its ids) ever becomes a label.
    const routes = new Set(samples.filter((s) => s.labels.route !== undefined).map((s) => s.labels.route));
    t.false(
      [...routes].some((route) => /\d/.test(route.replace('/api/v1', ''))),
      [...routes].join(', '),
    );

    // prom-client's default process metrics are there.
    t.true((valueOf(samples, 'process_cpu_user_seconds_total') ?? -1) >= 0);
    t.true((valueOf(samples, 'nodejs_heap_size_used_bytes') ?? 0) > 0);
    for (const name of [
      'http_request_duration_seconds',
      'marketplace_orders_placed_total',
      'marketplace_order_refusals_total',
      'marketplace_stock_actors_active',
      'marketplace_group_commit_batch_size',
      'marketplace_outbox_pending',
      'marketplace_cache_requests_total',
    ])
      t.regex(res.text, new RegExp(`^# HELP ${name} \\S`, 'm'));

    // The previous scrape is itself counted, under its route.
    const again = await scrape(app);
    t.is(
      valueOf(again.samples, 'http_request_duration_seconds_count', {
        method: 'GET',
        route: '/metrics',
        status: '200',
      }),
      1,
    );
  },
);

test('production: loopback may scrape; a remote client needs METRICS_TOKEN', async (t) => {
  const local = await scrape(production);
  t.is(local.res.status, 200);
  // Its own registry: the other app's order is not counted here.
  t.is(valueOf(local.samples, 'marketplace_orders_placed_total'), 0);

  const remote = { 'X-Forwarded-For': '203.0.113.7' };
  const refused = await scrape(production, remote);
  assertError(t, refused.res, 403, 'FORBIDDEN', '/metrics');
  t.regex(refused.res.body.message, /METRICS_TOKEN/);
  t.false(refused.res.text.includes('marketplace_'));

  const wrong = await scrape(production, { ...remote, Authorization: `Bearer ${METRICS_TOKEN}x` });
  assertError(t, wrong.res, 403, 'FORBIDDEN', '/metrics');

  const allowed = await scrape(production, { ...remote, Authorization: `Bearer ${METRICS_TOKEN}` });
  t.is(allowed.res.status, 200);
  t.is(valueOf(allowed.samples, 'marketplace_stock_actors_active'), 0);
  t.true((valueOf(allowed.samples, 'process_resident_memory_bytes') ?? 0) > 0);
});

test('outside production anyone may scrape; a Bearer that is no member token is ignored', async (t) => {
  const { res, samples } = await scrape(app, { Authorization: 'Bearer not-a-member-token' });
  t.is(res.status, 200);
  t.true((valueOf(samples, 'marketplace_orders_placed_total') ?? -1) >= 0);
});
