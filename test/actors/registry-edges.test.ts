// The stock registry's edges that product-stock-actors.test.ts leaves open, against a real database: an actor that
// errors (not a failed load, which ends in a final state, but an exception in a step) is dropped and fails every
// command waiting on it; `evict` (a shard moved away) stops only the idle actors it picks and makes the others
// re-read, and the next command for an evicted product reads it again; a refusal is decided on the loaded view only
// while that view is at most 100 ms old (the default `freshMs`, which the inventory relies on).
import test from 'ava';
import { createStockRegistry, type ReserveResult } from '../../actors/registry';
import type { ProductView } from '../../actors/stock-rules';
import { createLogger } from '../../lib/logger';
import { loadProductView } from '../../lib/inventory/stock-repository';
import { createMember, createProduct } from '../helpers/factories';
import { LogCollector, startTestApp, type TestApp } from '../helpers/harness';
import { eventually } from '../orders/order-fixtures';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

const quietLogger = createLogger({ level: 'fatal', format: 'line', out: { write: () => undefined } });

/** A loader of the test database that counts its reads per product. */
function countingLoader() {
  const loads = new Map<number, number>();
  return {
    loads: (productId: number) => loads.get(productId) ?? 0,
    load: async (productId: number) => {
      loads.set(productId, (loads.get(productId) ?? 0) + 1);
      return loadProductView(app.db, productId);
    },
  };
}

/** Marks a command's failure as handled: the test awaits it later, or a failed assertion ends the test first. */
function later<T>(answer: T | Promise<T>): T | Promise<T> {
  if (answer instanceof Promise) answer.catch(() => undefined);
  return answer;
}

/** The command's outcome, or a failure when it is still unanswered after `ms` (a command left hanging). */
async function settled<T>(answer: T | Promise<T>, ms = 3000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve(answer),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`still unanswered after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function held(result: ReserveResult) {
  if (!result.ok) throw new Error(`refused: ${result.reason}`);
  return result.reservation;
}

/** The view as read, but its status cannot be read while `poisoned()`: the rules throw inside the actor's step. */
function poison(view: ProductView | null, poisoned: () => boolean): ProductView | null {
  if (!view) return view;
  const { status, ...rest } = view;
  return Object.defineProperty({ ...rest }, 'status', {
    enumerable: true,
    get: () => {
      if (poisoned()) throw new Error('unreadable view');
      return status;
    },
  }) as ProductView;
}

const stockOf = async (productId: number, stock: number) =>
  app.db('products').where('id', productId).update({ stock_quantity: stock });

test('an actor that errors in a step fails every command waiting on it, is dropped, and the next command reads afresh', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 4 });
  const logs = new LogCollector();
  let loads = 0;
  const registry = createStockRegistry({
    // The first read yields a view the rules cannot judge: the actor's first decision throws.
    load: async (id) => {
      const view = await loadProductView(app.db, id);
      return ++loads === 1 ? poison(view, () => true) : view;
    },
    logger: createLogger({ level: 'error', format: 'json', out: logs }),
    idleMs: 60_000,
  });
  try {
    // Asked while the product loads: all three wait (deferred), and are replayed when the read is done.
    const waiting = [
      registry.reserve(productId, 1),
      registry.reserve(productId, 2),
      registry.reserve(productId, 1),
    ];
    t.true(waiting.every((answer) => answer instanceof Promise));
    await Promise.all(
      waiting.map((answer) => t.throwsAsync(settled(answer), { message: /unreadable view$/ })),
    );
    t.is(registry.activeCount(), 0, 'the failed actor is dropped');
    t.is(registry.inspect(productId), null);
    t.regex(logs.text, new RegExp(`Stock actor of product ${productId} failed`));
    // A fresh activation reads the product again and decides as usual.
    t.like(await settled(registry.reserve(productId, 4)), { ok: true, product: { id: productId, stock: 4 } });
    t.is(loads, 2);
    t.is(registry.activeCount(), 1);
  } finally {
    registry.stop();
  }
});

test('a product write that committed is reported as done when the read after it fails; the next command reads anew', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 4 });
  let loads = 0;
  const registry = createStockRegistry({
    // The read after the write fails (the database went away between the two), the ones before and after do not.
    load: async (id) => {
      if (++loads === 2) throw new Error('connection lost after the write');
      return loadProductView(app.db, id);
    },
    logger: quietLogger,
    idleMs: 60_000,
  });
  try {
    held(await settled(registry.reserve(productId, 1)));
    await t.notThrowsAsync(
      settled(registry.exclusive(productId, () => stockOf(productId, 9).then(() => undefined))),
      'the PATCH that committed is not answered with an error',
    );
    t.is(loads, 2);
    t.is(registry.activeCount(), 0, 'the actor whose read failed is dropped');
    t.like(await settled(registry.reserve(productId, 9)), { ok: true, product: { stock: 9 } }, 'read anew');
    t.is(loads, 3);
  } finally {
    registry.stop();
  }
});

test('a ready actor that errors on a command answers it with the error at once (a rejected promise, never a hang)', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 4 });
  let poisoned = false;
  let loads = 0;
  const registry = createStockRegistry({
    load: async (id) => {
      const view = await loadProductView(app.db, id);
      return ++loads === 1 ? poison(view, () => poisoned) : view;
    },
    logger: quietLogger,
    idleMs: 60_000,
  });
  try {
    const first = held(await registry.reserve(productId, 1));
    poisoned = true;
    const failing = registry.reserve(productId, 1);
    t.true(failing instanceof Promise, 'failed within the call: handed out as a rejected promise');
    await t.throwsAsync(settled(failing), { message: /unreadable view$/ });
    t.is(registry.activeCount(), 0);
    // The dead actor's reservation settles to nothing (its units were never written); no throw.
    t.notThrows(() => registry.release(first));
    t.like(await settled(registry.reserve(productId, 4)), { ok: true, product: { stock: 4 } });
    t.is(loads, 2);
  } finally {
    registry.stop();
  }
});

test('evict stops the idle actors it picks; busy ones re-read and keep their reservations; others are untouched', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const idle = await createProduct(app, seller.id, { stockQuantity: 5 });
  const holding = await createProduct(app, seller.id, { stockQuantity: 5 });
  const loading = await createProduct(app, seller.id, { stockQuantity: 5 });
  const elsewhere = await createProduct(app, seller.id, { stockQuantity: 5 });
  const counter = countingLoader();
  let letLoad!: () => void;
  const gate = new Promise<void>((resolve) => (letLoad = resolve));
  const registry = createStockRegistry({
    // The first read of `loading` waits for the test: its command is outstanding, nothing reserved yet.
    load: async (id) => {
      if (id === loading && counter.loads(id) === 0) {
        const view = counter.load(id);
        await gate;
        return view;
      }
      return counter.load(id);
    },
    logger: quietLogger,
    idleMs: 60_000,
  });
  try {
    const committed = held(await registry.reserve(idle, 2));
    registry.committed(committed); // idle now: nothing reserved, nothing waiting
    const kept = held(await registry.reserve(holding, 2));
    const pending = later(registry.reserve(loading, 1));
    t.true(pending instanceof Promise);
    registry.committed(held(await registry.reserve(elsewhere, 1))); // idle, but not picked
    t.is(registry.activeCount(), 4);
    // Changed behind the actors' backs (as the new owner of the shard may have done).
    for (const id of [idle, holding, loading, elsewhere]) await stockOf(id, 9);

    t.is(
      registry.evict((id) => id !== elsewhere),
      1,
    );
    t.is(committed.entry.actor.getSnapshot().status, 'stopped', "the idle actor's actor is stopped");
    t.is(registry.inspect(idle), null);
    t.is(registry.activeCount(), 3);
    // The actor holding a reservation stays and re-reads; the reservation still settles through it.
    await eventually(async () => registry.inspect(holding)?.stock === 9, 3000);
    t.like(registry.inspect(holding), { stock: 9, reserved: 2, status: 'ready' });
    t.is(counter.loads(holding), 2);
    registry.committed(kept);
    t.like(registry.inspect(holding), { stock: 7, reserved: 0 });
    // The one still loading answers its command, then reads again (the RELOAD waited behind it).
    letLoad();
    t.like(await settled(pending), { ok: true });
    await eventually(
      async () => counter.loads(loading) === 2 && registry.inspect(loading)?.stock === 9,
      3000,
    );
    // Not picked: still active, not re-read (its stale stock shows it).
    t.is(counter.loads(elsewhere), 1);
    t.like(registry.inspect(elsewhere), { stock: 4, reserved: 0, status: 'ready' });
    // The next command for the evicted product activates a fresh actor, which reads the database again.
    const again = later(registry.reserve(idle, 9));
    t.true(again instanceof Promise, 'a new activation loads first');
    t.like(await settled(again), { ok: true, product: { id: idle, stock: 9 } });
    t.is(counter.loads(idle), 2);
    t.not(held(await settled(again)).entry, committed.entry);
  } finally {
    registry.stop();
  }
});

test.serial(
  'without `freshMs` a refusal is decided on a view up to 100 ms old; an older one is re-read first',
  async (t) => {
    const seller = await createMember(app, 'SELLER');
    const productId = await createProduct(app, seller.id, { stockQuantity: 5 });
    const counter = countingLoader();
    const registry = createStockRegistry({ load: counter.load, logger: quietLogger, idleMs: 60_000 });
    // The registry stamps each read and each command with Date.now(): a frozen clock makes the ages exact.
    const realNow = Date.now;
    const start = realNow();
    let clock = start;
    Date.now = () => clock;
    try {
      registry.release(held(await registry.reserve(productId, 1))); // read at `start`; nothing held now
      await stockOf(productId, 8); // more stock, unseen by the actor
      clock = start + 100;
      const refused = later(registry.reserve(productId, 8));
      t.false(refused instanceof Promise, 'decided on the view in memory, not re-read');
      t.like(refused, { ok: false, reason: 'INSUFFICIENT_STOCK', product: { stock: 5 } });
      t.is(counter.loads(productId), 1);
      clock = start + 101;
      const reread = later(registry.reserve(productId, 8));
      t.true(reread instanceof Promise, 'too old to refuse on: read again first');
      t.like(await settled(reread), { ok: true, product: { stock: 8 } });
      t.is(counter.loads(productId), 2);
    } finally {
      Date.now = realNow;
      registry.stop();
    }
  },
);
