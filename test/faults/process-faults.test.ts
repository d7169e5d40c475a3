// The real server process (`node --import tsx lib/server.ts`) under order load from keep-alive clients:
// - SIGTERM: every request sent gets its response (no ECONNRESET, no hang-up), the last response on each
//   keep-alive socket says `Connection: close`, the process exits 0, stock is conserved;
// - kill -9, then restart: stock + sold = initial, every acknowledged order exists, a retry with the same
//   Idempotency-Key never makes a second order, each OrderCreated notification is delivered exactly once.
// Neither process logs SQL text, bound values or a bcrypt hash.
import http from 'node:http';
import test from 'ava';
import knexFactory, { type Knex } from 'knex';
import { createTokenService } from '../../lib/auth/tokens';
import { knexConfig } from '../../lib/db';
import { createTestDatabase, request, testConfig, type TestDatabase } from '../helpers/harness';
import { startServerProcess, type ServerProcess } from '../helpers/server-process';
import { eventually } from '../orders/order-fixtures';
import {
  assertNoSecrets,
  makeWorld,
  onMariaDb,
  SKIPPED_ON_SQLITE,
  taggedOrder,
  type FaultWorld,
} from './fault-fixtures';
import { assertAcknowledgedExist, assertStockConserved } from '../helpers/books';

interface Outcome {
  status?: number;
  connection?: string;
  body?: { orders?: Array<{ id: number }>; code?: string };
  error?: string;
}

/** One POST /orders on a keep-alive agent, as raw as a client sees it. */
function post(url: string, agent: http.Agent, token: string, body: unknown, key?: string): Promise<Outcome> {
  const payload = JSON.stringify(body);
  return new Promise((resolve) => {
    const req = http.request(
      `${url}/api/v1/orders`,
      {
        method: 'POST',
        agent,
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(payload),
          Authorization: `Bearer ${token}`,
          ...(key ? { 'Idempotency-Key': key } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode,
            connection: String(res.headers.connection ?? ''),
            body: text ? JSON.parse(text) : undefined,
          }),
        );
        res.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    req.end(payload);
  });
}

if (!onMariaDb) {
  test.skip(SKIPPED_ON_SQLITE, () => {});
} else {
  let database: TestDatabase;
  let db: Knex;
  const children: ServerProcess[] = [];

  test.before(async () => {
    database = await createTestDatabase();
    db = knexFactory(knexConfig(testConfig(database.env).database));
  });
  test.after.always(async () => {
    for (const child of children) if (child.child.exitCode === null) child.child.kill('SIGKILL');
    await db?.destroy();
    await database?.drop();
  });

  async function start(): Promise<ServerProcess> {
    const server = await startServerProcess({ ...database.env, INVENTORY_MODE: 'actor' });
    children.push(server);
    return server;
  }

  async function world(server: ServerProcess): Promise<FaultWorld> {
    // the server migrated the database; the world is made straight in it
    await eventually(async () => (await request(server.url, 'GET', '/health/ready')).status === 200);
    const config = testConfig(database.env);
    return makeWorld(
      { db, tokens: createTokenService(config.jwt), bcryptCost: config.bcryptCost },
      { buyers: 8, products: 4, stock: 2_000 },
    );
  }

  /** The stored bcrypt hashes of a world's members: none may appear in a log. */
  async function passwordHashes(w: FaultWorld): Promise<string[]> {
    const rows = (await db('members')
      .whereIn(
        'id',
        [...w.sellers, ...w.buyers].map((member) => member.id),
      )
      .select('password_hash')) as Array<{ password_hash: string }>;
    return rows.map((row) => row.password_hash);
  }

  /** Products of one seller, so every request makes exactly one order. */
  const cart = (w: FaultWorld, n: number, i: number) => {
    const ids = [...w.initial.keys()];
    const mine = ids.filter((_, k) => k % 2 === n % 2);
    return mine.slice(0, 1 + ((n + i) % 2)).map((productId) => ({ productId, quantity: 1 + (i % 2) }));
  };

  test.serial(
    'SIGTERM under keep-alive order load: every request answered, Connection: close last, exit 0',
    async (t) => {
      const server = await start();
      const w = await world(server);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
      const acknowledged: number[] = [];
      const broken: string[] = [];
      let closing = 0;
      let signalled = false;

      const client = async (n: number) => {
        const buyer = w.buyers[n % w.buyers.length];
        for (let i = 0; ; i++) {
          const out = await post(
            server.url,
            agent,
            buyer.token,
            taggedOrder(cart(w, n, i), `term-${n}-${i}`),
          );
          if (out.error) {
            // a new connection after the listener closed is refused: not a request that was cut
            if (out.error === 'ECONNREFUSED' && signalled) return;
            broken.push(`${n}/${i}: ${out.error}`);
            return;
          }
          if (out.status === 201) acknowledged.push(...out.body!.orders!.map((o) => o.id));
          else broken.push(`${n}/${i}: ${out.status} ${JSON.stringify(out.body)}`);
          if (out.connection === 'close') {
            closing++;
            return; // this socket is done; a polite client goes elsewhere
          }
        }
      };
      const load = Promise.all(Array.from({ length: 16 }, (_, n) => client(n)));
      await eventually(async () => acknowledged.length >= 80, 30_000);
      signalled = true;
      server.child.kill('SIGTERM');
      await load;
      agent.destroy();

      t.deepEqual(broken, [], 'no request was reset, hung up on or failed');
      t.true(closing >= 1, 'keep-alive clients were told Connection: close');
      t.is(await server.exited, 0);
      t.regex(server.output(), /SIGTERM received, shutting down/);
      t.regex(server.output(), /Shutdown complete/);
      await assertStockConserved(t, db, w.initial);
      await assertAcknowledgedExist(t, db, acknowledged);
      assertNoSecrets(t, server.output());
    },
  );

  test.serial(
    'kill -9 under order load, restart: books balance, acknowledged orders exist, one order per key, notifications once',
    async (t) => {
      const first = await start();
      const w = await world(first);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
      const bodies = new Map<string, { token: string; body: unknown }>();
      const answered = new Map<string, number>(); // key -> order id acknowledged with 201
      const unknown: string[] = [];
      let stop = false;

      const client = async (n: number) => {
        const buyer = w.buyers[n % w.buyers.length];
        for (let i = 0; !stop; i++) {
          const key = `crash-${n}-${i}`;
          const body = taggedOrder(cart(w, n, i), key);
          bodies.set(key, { token: buyer.token, body });
          const out = await post(first.url, agent, buyer.token, body, key);
          if (out.status === 201) answered.set(key, out.body!.orders![0].id);
          else {
            unknown.push(key); // no answer (the process died) or an error: the client does not know
            if (out.error) return;
          }
        }
      };
      const load = Promise.all(Array.from({ length: 16 }, (_, n) => client(n)));
      await eventually(async () => answered.size >= 80, 30_000);
      first.child.kill('SIGKILL');
      stop = true;
      await load;
      agent.destroy();
      t.true(unknown.length >= 1, 'some requests were in flight when the process died');

      const second = await start();
      // The clients retry what they do not know with the same key. TODO(issue 12 item 1): a claim left by
      // the dead process is taken over only after its 30 s stale window today; the lease makes it 2 s.
      const retries = await Promise.all(
        unknown.map(async (key) => {
          const { token, body } = bodies.get(key)!;
          for (;;) {
            const res = await request(second.url, 'POST', '/api/v1/orders', {
              token,
              body,
              headers: { 'Idempotency-Key': key },
            });
            if (res.status !== 503) return { key, res };
            await new Promise((resolve) => setTimeout(resolve, 1_000));
          }
        }),
      );
      for (const { key, res } of retries) {
        t.is(res.status, 201, `${key}: ${JSON.stringify(res.body)}`);
        if (res.status === 201) answered.set(key, res.body.orders[0].id);
      }

      // every key: exactly the one order its client was told about
      const byKey = new Map<string, number[]>();
      for (const row of (await db('orders')
        .where('address_detail', 'like', 'crash-%')
        .select('id', 'address_detail')) as Array<{ id: number; address_detail: string }>) {
        byKey.set(row.address_detail, [...(byKey.get(row.address_detail) ?? []), Number(row.id)]);
      }
      for (const [key, ids] of byKey)
        t.deepEqual(ids, [answered.get(key)], `${key}: one order, the acknowledged one`);
      for (const [key, id] of answered)
        t.deepEqual(byKey.get(key), [id], `${key}: acknowledged order present`);

      await assertStockConserved(t, db, w.initial);
      await assertAcknowledgedExist(t, db, [...answered.values()]);

      // each OrderCreated delivered exactly once (the new process delivers what the dead one left)
      await eventually(async () => {
        const row = await db('notification_outbox').whereNull('delivered_at').count({ n: '*' }).first();
        return Number(row?.n) === 0;
      }, 15_000);
      const orderIds = [...byKey.values()].flat();
      const notes = (await db('notifications').where('type', 'OrderCreated').select('payload')) as Array<{
        payload: string;
      }>;
      const perOrder = new Map<number, number>();
      for (const note of notes) {
        const { orderId } = JSON.parse(note.payload) as { orderId: number };
        perOrder.set(orderId, (perOrder.get(orderId) ?? 0) + 1);
      }
      for (const id of orderIds) t.is(perOrder.get(id), 1, `order ${id}: OrderCreated delivered once`);

      second.child.kill('SIGTERM');
      t.is(await second.exited, 0);
      const hashes = await passwordHashes(w);
      t.is(hashes.length, 10);
      assertNoSecrets(t, first.output() + second.output(), hashes);
    },
  );
}
