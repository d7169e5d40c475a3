// Shared by the order benchmarks: a short phase that can fail the stock rule, which the measured rounds cannot
// (every product has BIG_STOCK units). The hot product's stock is set to a small N the way a seller sets it
// (PATCH stockQuantity through the HTTP API, so the service learns of it by its own path: its actor reloads, or
// the owner's does in a cluster), then the buyers order one unit each, with autocannon as in the measured
// rounds, until answers are 409s. The database must then show exactly N units sold in the phase, the stock at
// 0 and no product below 0.
import autocannon from 'autocannon';
import type { Knex } from 'knex';
import { address, type OrderWorld } from './order-world';

export interface SellOut {
  /** The stock the phase started with (N). */
  stock: number;
  /** 201s the generator received (orders it saw accepted; answers cut off when it stopped are not counted). */
  accepted: number;
  /** 409s the generator received. */
  refused: number;
  /** Any other answer, socket errors and timeouts. */
  errors: number;
  seconds: number;
  /** Units of the hot product in the phase's orders, from the database. */
  sold: number;
  finalStock: number;
  /** Products below 0 stock after the phase (all of them, not only the hot one). */
  negativeStock: number;
  /** More units sold than the stock held, or a stock below 0. */
  oversold: boolean;
  /** Exactly N sold, stock 0, no stock below 0, and no more 201s than units sold. */
  ok: boolean;
}

async function unitsSold(db: Knex, productId: number): Promise<number> {
  const row = (await db('order_items').where('product_id', productId).sum({ n: 'quantity' }).first()) as
    { n: string | number | null } | undefined;
  return Number(row?.n ?? 0);
}

/**
 * Until no order for the product commits any more: requests cut off by a stopped generator, and the last group
 * commit of reservations made before the 409s began, may still commit. Quiet for 1 s (four reads) counts as done.
 */
async function settle(db: Knex, productId: number): Promise<number> {
  let last = await unitsSold(db, productId);
  let quiet = 0;
  for (let i = 0; i < 60 && quiet < 4; i++) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = await unitsSold(db, productId);
    quiet = now === last ? quiet + 1 : 0;
    last = now;
  }
  if (quiet < 4)
    throw new Error(`orders for product ${productId} kept committing for 15 s after the load stopped`);
  return last;
}

export async function sellOut(options: {
  /** The service's instances; the PATCH goes to the first, the orders round-robin to all. */
  urls: string[];
  db: Knex;
  world: OrderWorld;
  stock: number;
  connections: number;
  /** The phase stops at the first of: as many 409s as connections, this many seconds. */
  maxSeconds: number;
  /** Read the books in one REPEATABLE READ snapshot (MariaDB). */
  repeatableRead: boolean;
}): Promise<SellOut> {
  const { db, world, stock } = options;
  const before = await settle(db, world.hot);
  const patch = await fetch(`${options.urls[0]}/api/v1/products/${world.hot}`, {
    method: 'PATCH',
    headers: { Authorization: `Bearer ${world.seller.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ stockQuantity: stock }),
  });
  if (patch.status !== 200)
    throw new Error(`PATCH stockQuantity answered ${patch.status}: ${await patch.text()}`);

  let n = 0;
  let refused = 0;
  const started = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        // autocannon spreads its connections over several URLs (round-robin); its types name only one
        url: options.urls as unknown as string,
        connections: options.connections,
        duration: options.maxSeconds,
        timeout: 60,
        requests: [
          {
            method: 'POST',
            path: '/api/v1/orders',
            setupRequest: (req) => ({
              ...req,
              headers: {
                Authorization: `Bearer ${world.tokens[n++ % world.tokens.length]}`,
                'Content-Type': 'application/json',
              },
              body: JSON.stringify({
                orderItems: [{ productId: world.hot, quantity: 1 }],
                shippingAddress: address,
              }),
            }),
          },
        ],
      },
      (err, r) => (err ? reject(err) : resolve(r)),
    );
    instance.on('response', (_client, status) => {
      if (status === 409 && ++refused === options.connections) instance.stop();
    });
  });
  const seconds = Number(((performance.now() - started) / 1000).toFixed(1));
  await settle(db, world.hot);

  const books = await db.transaction(
    async (trx) => ({
      sold: (await unitsSold(trx, world.hot)) - before,
      finalStock: Number(
        (await trx('products').where('id', world.hot).first('stock_quantity')).stock_quantity,
      ),
      negativeStock: Number(
        ((await trx('products').where('stock_quantity', '<', 0).count({ n: '*' }).first()) as { n: unknown })
          .n,
      ),
    }),
    options.repeatableRead ? { isolationLevel: 'repeatable read' } : undefined,
  );
  const statuses = Object.fromEntries(
    Object.entries(result.statusCodeStats ?? {}).map(([status, s]) => [status, s.count ?? 0]),
  );
  const answered = Object.values(statuses).reduce((a, b) => a + b, 0);
  const accepted = statuses['201'] ?? 0;
  const refusedAnswers = statuses['409'] ?? 0;
  const oversold = books.sold > stock || books.finalStock < 0 || books.negativeStock > 0;
  return {
    stock,
    accepted,
    refused: refusedAnswers,
    // autocannon's `errors` already counts its timeouts.
    errors: answered - accepted - refusedAnswers + result.errors,
    seconds,
    ...books,
    oversold,
    // More 201s than units in the database would be orders acknowledged but never stored (the generator can only
    // under-count 201s: answers cut off when it stops).
    ok: books.sold === stock && books.finalStock === 0 && books.negativeStock === 0 && accepted <= books.sold,
  };
}

/** One line of a result table for a sell-out phase. */
export function sellOutLine(label: string, s: SellOut): string {
  return `| ${label} | ${s.stock} | ${s.accepted} | ${s.refused} | ${s.errors} | ${s.sold} | ${s.finalStock} | ${s.negativeStock} | ${s.seconds} | ${s.oversold ? '**YES**' : 'no'} | ${s.ok ? 'yes' : '**NO**'} |`;
}

export const SELL_OUT_HEADER = [
  '| sell-out | stock N | 201s | 409s | other | sold (database) | final stock | products < 0 | s | oversold | exactly N sold |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|',
];
