// The product stock machine on its own, with no database: the loader is a function returning a view, so
// these tests pin the in-memory decisions (reserve against stock - reserved, commit, release, re-read,
// the status following the stock), the deferral of commands during I/O, passivation and load failure.
import test from 'ava';
import { createActor, fromPromise } from 'xstate';
import {
  productStockMachine,
  type LoadedView,
  type ReserveReply,
  type StockCommand,
} from '../../actors/product-stock-machine';
import type { ProductView } from '../../actors/stock-rules';

const product = (overrides: Partial<ProductView> = {}): ProductView => ({
  id: 1,
  sellerId: 2,
  name: 'Lamp',
  priceCents: 1000,
  status: 'ON_SALE',
  stock: 3,
  catalogVersion: 1,
  ...overrides,
});

function start(load: () => Promise<ProductView | null>, input: { idleMs?: number; freshMs?: number } = {}) {
  const machine = productStockMachine.provide({
    actors: {
      loadProduct: fromPromise<LoadedView, { productId: number }>(async () => ({
        view: await load(),
        at: Date.now(),
      })),
    },
  });
  const actor = createActor(machine, {
    input: { productId: 1, idleMs: input.idleMs ?? 60_000, freshMs: input.freshMs ?? 60_000 },
  });
  const errors: unknown[] = [];
  actor.subscribe({ error: (err) => errors.push(err) });
  actor.start();
  const reserve = (quantity: number) =>
    new Promise<ReserveReply>((resolve, reject) =>
      actor.send({ type: 'RESERVE', quantity, at: Date.now(), reply: resolve, fail: reject }),
    );
  const send = (command: StockCommand) => actor.send(command);
  const view = () => {
    const { context, value, status } = actor.getSnapshot();
    return {
      value: typeof value === 'string' ? value : Object.keys(value)[0],
      status,
      stock: context.product?.stock,
      productStatus: context.product?.status,
      reserved: context.reserved,
    };
  };
  return { actor, reserve, send, view, errors };
}

test('reservations are decided against stock minus what is reserved; release and commit settle them', async (t) => {
  let stored = product({ stock: 3 });
  const { actor, reserve, send, view, errors } = start(async () => stored);
  t.like(await reserve(2), { ok: true }); // sent while loading: deferred, then decided
  // More than the stock can never fit: refused at once.
  t.deepEqual(await reserve(4), { ok: false, reason: 'INSUFFICIENT_STOCK', product: product({ stock: 3 }) });
  t.like(view(), { value: 'ready', stock: 3, reserved: 2 });
  send({ type: 'RELEASE', quantity: 2 });
  t.like(view(), { stock: 3, reserved: 0 });
  t.like(await reserve(3), { ok: true });
  send({ type: 'COMMITTED', quantity: 3 });
  // the last units committed: the status follows the stock
  t.like(view(), { stock: 0, reserved: 0, productStatus: 'SOLD_OUT' });
  t.like(await reserve(1), { ok: false, reason: 'INSUFFICIENT_STOCK' });
  // A cancellation gave two back: the actor re-reads what the database holds, it never adds them itself.
  stored = product({ stock: 2 });
  send({ type: 'RELOAD' });
  await sleep(0);
  t.like(view(), { value: 'ready', stock: 2, productStatus: 'ON_SALE' });
  t.like(await reserve(2), { ok: true });
  actor.stop();
  t.deepEqual(errors, []);
});

test('a reservation that fits the stock but not what is held now waits for a reservation to settle, then is decided', async (t) => {
  const stored = product({ stock: 3 });
  const { actor, reserve, send, view, errors } = start(async () => stored);
  t.like(await reserve(2), { ok: true });
  // 2 of 3 held: 2 more would fit were they given back. It waits (a cart may yet be refused for another product).
  let decided: ReserveReply | undefined;
  const waiting = reserve(2).then((reply) => (decided = reply));
  const alsoWaiting = reserve(3);
  await sleep(5);
  t.is(decided, undefined);
  t.like(view(), { value: 'ready', stock: 3, reserved: 2 });
  // One that fits now is not held up by them.
  t.like(await reserve(1), { ok: true });
  send({ type: 'RELEASE', quantity: 2 }); // 1 held: the first waiting (2) takes its units, the 3 waits on
  t.like(await waiting, { ok: true });
  t.like(view(), { stock: 3, reserved: 3 });
  send({ type: 'COMMITTED', quantity: 3 }); // the units went: the 3 can never fit now
  t.like(await alsoWaiting, { ok: false, reason: 'INSUFFICIENT_STOCK' });
  t.like(view(), { stock: 0, reserved: 0, productStatus: 'SOLD_OUT' });
  actor.stop();
  t.deepEqual(errors, []);
});

test('a waiting reservation is decided again on a fresh read; a failed read fails it', async (t) => {
  let stored: ProductView | Error = product({ stock: 2 });
  const { actor, reserve, send, view } = start(async () => {
    if (stored instanceof Error) throw stored;
    return stored;
  });
  t.like(await reserve(2), { ok: true });
  const waiting = reserve(1);
  // Stock given back elsewhere (a cancellation): the read shows 4, so it fits beside the 2 held.
  stored = product({ stock: 4 });
  send({ type: 'RELOAD' });
  t.like(await waiting, { ok: true });
  t.like(view(), { stock: 4, reserved: 3 });
  const failing = reserve(2);
  stored = new Error('the database is gone');
  send({ type: 'RELOAD' });
  await t.throwsAsync(failing, { message: 'the database is gone' });
  actor.stop();
});

test('unknown, deleted and draft products are refused with their reason', async (t) => {
  for (const [view, reason] of [
    [null, 'NOT_FOUND'],
    [product({ status: 'DELETED' }), 'NOT_FOUND'],
    [product({ status: 'DRAFT' }), 'NOT_ON_SALE'],
  ] as const) {
    const { actor, reserve } = start(async () => view);
    t.like(await reserve(1), { ok: false, reason });
    actor.stop();
  }
});

test('an exclusive write runs with no decision in between; the actor reads the product again after it', async (t) => {
  let stored = product({ stock: 1 });
  const { actor, reserve, send, view } = start(async () => stored);
  t.like(await reserve(1), { ok: true });
  let finishWrite!: () => void;
  const written = new Promise<void>((resolve) => (finishWrite = resolve));
  const exclusive = new Promise<void>((resolve, reject) =>
    send({
      type: 'EXCLUSIVE',
      run: async () => {
        await written;
        stored = product({ stock: 10 });
      },
      reply: resolve,
      fail: reject,
    }),
  );
  const during = reserve(5); // arrives while the write runs: waits for it
  t.is(view().value, 'writing');
  finishWrite();
  await exclusive;
  t.like(await during, { ok: true }, 'decided on the read after the write');
  t.like(view(), { value: 'ready', stock: 10, reserved: 6 });
  actor.stop();
});

test('a write that is done is answered as done even when the read after it fails; the commands waiting fail with the read', async (t) => {
  let reads = 0;
  const { reserve, send, view } = start(async () => {
    if (++reads > 1) throw new Error('the database went away');
    return product({ stock: 4 });
  });
  t.like(await reserve(1), { ok: true });
  let finishWrite!: () => void;
  const written = new Promise<void>((resolve) => (finishWrite = resolve));
  const exclusive = new Promise<void>((resolve, reject) =>
    send({ type: 'EXCLUSIVE', run: () => written, reply: resolve, fail: reject }),
  );
  const during = reserve(1);
  finishWrite();
  await t.notThrowsAsync(exclusive, 'the written change is not reported as an error');
  await t.throwsAsync(during, { message: 'the database went away' });
  t.is(reads, 2);
  t.like(
    view(),
    { value: 'failed', status: 'done' },
    'the registry drops it; the next command loads the product anew',
  );
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A loader the test answers by hand: each read waits until `answer(stock)`. */
function heldLoader() {
  const waiting: Array<(view: ProductView) => void> = [];
  let answered = 0;
  return {
    load: () => new Promise<ProductView>((resolve) => waiting.push(resolve)),
    /** Reads started so far. */
    reads: () => waiting.length,
    async answer(stock: number) {
      waiting[answered++](product({ stock }));
      await sleep(0);
    },
  };
}

test('news of a commit during a read settles its reservation and the product is read again (the read may have seen it)', async (t) => {
  for (const [readStock, why] of [
    [6, 'the read saw the commit'],
    [10, 'the read was before the commit'],
  ] as const) {
    const loader = heldLoader();
    const { actor, reserve, send, view } = start(loader.load);
    await loader.answer(10);
    t.like(await reserve(4), { ok: true });
    send({ type: 'RELOAD' }); // e.g. a price edit elsewhere
    t.is(loader.reads(), 2);
    // The batch's COMMIT is in the database; its news reaches the actor while it reads.
    send({ type: 'COMMITTED', quantity: 4 });
    t.like(view(), { value: 'loading', reserved: 0 }, why);
    await loader.answer(readStock);
    t.is(loader.reads(), 3, `${why}: read again`);
    t.is(view().value, 'loading');
    await loader.answer(6); // a read that starts after the news has the commit
    t.like(view(), { value: 'ready', stock: 6, reserved: 0 }, why);
    t.like(await reserve(6), { ok: true }, `${why}: the six units the database holds are sold`);
    actor.stop();
  }
});

test('news of a cancellation during a read makes the actor read again; so does a commit during an exclusive write', async (t) => {
  const loader = heldLoader();
  const { actor, reserve, send, view } = start(loader.load);
  await loader.answer(2);
  send({ type: 'RELOAD' });
  send({ type: 'RELOAD' }); // a cancellation gave 3 back: deferred until the read under way ends
  await loader.answer(2); // read before the cancellation's commit
  t.is(loader.reads(), 3);
  await loader.answer(5);
  t.like(view(), { value: 'ready', stock: 5 });

  t.like(await reserve(2), { ok: true });
  const exclusive = new Promise<void>((resolve, reject) =>
    send({
      type: 'EXCLUSIVE',
      run: async () => {
        // the batch with the 2 units commits while the write waits for its row lock
        send({ type: 'COMMITTED', quantity: 2 });
        await sleep(5);
      },
      reply: resolve,
      fail: reject,
    }),
  );
  await exclusive;
  await sleep(0);
  t.is(loader.reads(), 4, 'then the actor reads again, after the write and the commit');
  t.like(view(), { value: 'loading', reserved: 0 });
  await loader.answer(3);
  t.like(view(), { value: 'ready', stock: 3, reserved: 0 });
  await sleep(5);
  t.is(loader.reads(), 4, 'one read serves both: the news came before it started');
  t.like(await reserve(3), { ok: true });
  actor.stop();
});

test('RELOADs arriving during a read cost one more read, however many; the commands waiting are decided on it', async (t) => {
  const loader = heldLoader();
  const { actor, reserve, send, view } = start(loader.load);
  await loader.answer(2);
  send({ type: 'RELOAD' });
  // A burst of cancellations of this product while it reads: five RELOADs, and an order waiting.
  for (let i = 0; i < 5; i++) send({ type: 'RELOAD' });
  const waiting = reserve(4);
  await loader.answer(2);
  t.is(loader.reads(), 3, 'one more read');
  await loader.answer(7);
  t.like(await waiting, { ok: true }, 'decided on the last read');
  t.like(view(), { value: 'ready', stock: 7, reserved: 4 });
  await sleep(5);
  t.is(loader.reads(), 3, 'and no further reads');
  actor.stop();
});

test('an order waiting before a stream of RELOADs is decided on the next read, not after the stream', async (t) => {
  const loader = heldLoader();
  const { actor, send } = start(loader.load);
  let answer: ReserveReply | null = null;
  // The order arrives during the first read, before any RELOAD; then a cancellation lands during every read.
  send({ type: 'RESERVE', quantity: 1, at: Date.now(), reply: (reply) => (answer = reply), fail: () => {} });
  for (let read = 0; read < 10 && answer === null; read++) {
    send({ type: 'RELOAD' });
    await loader.answer(5);
  }
  t.like(answer, { ok: true });
  t.is(loader.reads(), 2, 'decided on the first read; the RELOAD after it made one more');
  actor.stop();
});

test('a stale view is re-read before a refusal', async (t) => {
  let stock = 0;
  const { actor, reserve } = start(async () => product({ stock }), { freshMs: 0 });
  t.like(await reserve(1), { ok: false, reason: 'INSUFFICIENT_STOCK' });
  stock = 4; // changed behind the actor's back
  await new Promise((resolve) => setTimeout(resolve, 5));
  t.like(await reserve(1), { ok: true });
  actor.stop();
});

async function passivated(view: () => { value: string; status: string }, withinMs = 2000): Promise<boolean> {
  for (const deadline = Date.now() + withinMs; Date.now() < deadline; await sleep(5)) {
    if (view().value === 'passivated' && view().status === 'done') return true;
  }
  return false;
}

test('an idle actor holding nothing passivates; a failed load fails the waiting commands', async (t) => {
  const idle = start(async () => product(), { idleMs: 10 });
  t.like(await idle.reserve(1), { ok: true });
  idle.send({ type: 'RELEASE', quantity: 1 });
  t.true(await passivated(idle.view));

  // the idle time counts from when the actor last held something, not from its last command: a whole
  // idle period with nothing reserved (timers never fire early, so 20 ms after the commit it still lives)
  const holding = start(async () => product(), { idleMs: 30 });
  t.like(await holding.reserve(1), { ok: true });
  await sleep(80);
  t.like(holding.view(), { value: 'ready', status: 'active', reserved: 1 });
  holding.send({ type: 'COMMITTED', quantity: 1 });
  t.like(holding.view(), { value: 'ready', status: 'active', reserved: 0, stock: 2 });
  await sleep(20);
  t.like(holding.view(), { value: 'ready', status: 'active' });
  t.true(await passivated(holding.view));

  const broken = start(async () => {
    throw new Error('database down');
  });
  await t.throwsAsync(broken.reserve(1), { message: 'database down' });
  t.like(broken.view(), { value: 'failed', status: 'done' });
});

test('an actor that keeps taking reservations stays, though it holds nothing between them; commands change no state', async (t) => {
  const busy = start(async () => product({ stock: 1_000 }), { idleMs: 30 });
  for (let i = 0; i < 15; i++) {
    t.like(await busy.reserve(1), { ok: true });
    busy.send({ type: 'COMMITTED', quantity: 1 });
    await sleep(10);
  }
  t.like(busy.view(), { value: 'ready', status: 'active', reserved: 0, stock: 985 });
  // commands are targetless transitions: none of them exits or re-enters a state (and restarts its timer)
  let targeted = 0;
  const sub = busy.actor.system.inspect((event) => {
    if (event.type !== '@xstate.microstep' || event.actorRef !== busy.actor) return;
    targeted += event._transitions.filter((transition) => transition.target?.length).length;
  });
  for (let i = 0; i < 20; i++) {
    t.like(await busy.reserve(1), { ok: true });
    busy.send({ type: 'COMMITTED', quantity: 1 });
  }
  sub.unsubscribe();
  t.is(targeted, 0);
  t.true(await passivated(busy.view));
});

/** Sends a RESERVE and records its reply (undefined while it waits). */
function asked(send: (command: StockCommand) => void, quantity: number) {
  const asking: { reply?: ReserveReply } = {};
  send({
    type: 'RESERVE',
    quantity,
    at: Date.now(),
    reply: (reply) => (asking.reply = reply),
    fail: () => {},
  });
  return asking;
}

test('a settled reservation decides the waiting ones at once: a RELEASE frees its units for them, a COMMITTED takes its units away', async (t) => {
  const released = start(async () => product({ stock: 3 }));
  t.like(await released.reserve(3), { ok: true });
  const waiting = asked(released.send, 1);
  t.is(waiting.reply, undefined, 'it fits the stock, not what is held: it waits');
  released.send({ type: 'RELEASE', quantity: 1 });
  t.like(waiting.reply, { ok: true }, 'decided in the same step as the RELEASE');
  t.like(released.view(), { stock: 3, reserved: 3 });
  released.actor.stop();

  const committed = start(async () => product({ stock: 3 }));
  t.like(await committed.reserve(2), { ok: true });
  t.like(await committed.reserve(1), { ok: true });
  const refused = asked(committed.send, 2);
  t.is(refused.reply, undefined);
  committed.send({ type: 'COMMITTED', quantity: 2 });
  t.like(
    refused.reply,
    { ok: false, reason: 'INSUFFICIENT_STOCK' },
    'one unit left, one held: refused at once',
  );
  t.like(committed.view(), { stock: 1, reserved: 1 });
  committed.actor.stop();
});

test('after a read the waiting reservations are decided before the commands that arrived during it', async (t) => {
  const loader = heldLoader();
  const { actor, send, view } = start(loader.load);
  await loader.answer(2);
  t.like(asked(send, 2).reply, { ok: true });
  const first = asked(send, 1); // waits for the 2 held to settle
  send({ type: 'RELOAD' });
  const second = asked(send, 1); // arrives during the read: deferred
  await loader.answer(3); // one more unit came back: room for one of them
  t.like(first.reply, { ok: true }, 'the one asked first has the unit');
  t.is(second.reply, undefined, 'the later one waits');
  t.like(view(), { value: 'ready', stock: 3, reserved: 3 });
  actor.stop();
});

test('a RELEASE during a read gives its units back once the read is done', async (t) => {
  const loader = heldLoader();
  const { actor, send, view } = start(loader.load);
  await loader.answer(2);
  t.like(asked(send, 2).reply, { ok: true });
  send({ type: 'RELOAD' });
  send({ type: 'RELEASE', quantity: 2 }); // a cart refused for its next product, or a failed batch
  t.like(view(), { value: 'loading', reserved: 2 });
  await loader.answer(2);
  t.like(view(), { value: 'ready', stock: 2, reserved: 0 });
  t.like(asked(send, 2).reply, { ok: true }, 'the two units are sold again');
  actor.stop();
});

test('a failed product write is answered with its error and the actor re-reads before deciding anything', async (t) => {
  const loader = heldLoader();
  const { actor, send, view } = start(loader.load);
  await loader.answer(5);
  const failed = new Promise<void>((resolve, reject) =>
    send({
      type: 'EXCLUSIVE',
      run: async () => {
        throw new Error('the write failed after its UPDATE, perhaps');
      },
      reply: resolve,
      fail: reject,
    }),
  );
  await t.throwsAsync(failed, { message: /the write failed/ });
  const waiting = asked(send, 4);
  t.is(loader.reads(), 2, 'read again');
  t.like(view(), { value: 'loading' });
  await loader.answer(3); // the write had taken effect: 3 left
  t.like(waiting.reply, { ok: false, reason: 'INSUFFICIENT_STOCK' }, 'decided on the fresh read');
  actor.stop();
});

test('a RELOAD and the news of a commit during one read cost one more read, not two', async (t) => {
  const loader = heldLoader();
  const { actor, send, view } = start(loader.load);
  await loader.answer(5);
  t.like(asked(send, 2).reply, { ok: true });
  send({ type: 'RELOAD' });
  send({ type: 'RELOAD' }); // waits for the next read
  send({ type: 'COMMITTED', quantity: 2 }); // that next read is needed anyway
  await loader.answer(5);
  t.is(loader.reads(), 3);
  await loader.answer(3);
  t.like(view(), { value: 'ready', stock: 3, reserved: 0 });
  await sleep(5);
  t.is(loader.reads(), 3, 'the RELOAD was served by the read the news started');
  actor.stop();
});
