// The group commit's turn order between batches and the actors' reads (lib/inventory/group-commit.ts, `read`
// and `inFlight`), driven directly with a real registry and database: a read asked for while a batch is in
// flight starts only after the batch committed and told its actors, and a batch waits for the reads under way
// before its transaction starts. Each step pushes a marker; the tests compare the order of the markers.
import test from 'ava';
import { createStockRegistry, type Reservation } from '../../actors/registry';
import { createGroupCommit } from '../../lib/inventory/group-commit';
import type { StockWriter } from '../../lib/inventory/inventory';
import { loadProductView } from '../../lib/inventory/stock-repository';
import { createMember, createProduct } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';

let app: TestApp;
test.before(async () => {
  app = await startTestApp();
});
test.after.always(async () => {
  await app?.close();
});

/** A gate the test opens: `wait()` resolves once `open()` was called. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, wait: () => opened };
}

/** Event-loop turns: the flush loop takes a batch one turn after it starts; a wrong order gets its chance. */
async function turns(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * A registry and group commit wired as lib/inventory/actor-inventory.ts wires them, on the test app's
 * database, and a product with 10 units whose actor holds a reservation of 2 (its first read is done).
 */
async function setup(events: string[]) {
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id, { stockQuantity: 10 });
  const registry = createStockRegistry({
    load: (id) => groupCommit.read(() => loadProductView(app.db, id)),
    logger: app.logger,
    idleMs: 60_000,
  });
  const groupCommit = createGroupCommit({
    db: app.db,
    logger: app.logger,
    registry,
    // Runs after the COMMIT, once the batch told its actors (registry.committedAll).
    announce: async (_productIds, scope) => {
      if (scope === 'stock') events.push('batch committed');
    },
  });
  const reserved = await registry.reserve(productId, 2);
  if (!reserved.ok) throw new Error(`reservation refused: ${JSON.stringify(reserved)}`);
  /** Submits one request whose writer (inside the batch's transaction) waits for `inTransaction`. */
  const submit = (inTransaction: Promise<void>) => {
    const writer: StockWriter<null, string> = {
      name: 'group-commit-reads',
      check: () => undefined,
      async write(_trx, batch) {
        events.push('batch transaction');
        await inTransaction;
        return batch.map(() => 'written');
      },
      committed: async () => true,
    };
    return groupCommit.submit({ details: null, lines: [] }, writer, [reserved.reservation as Reservation]);
  };
  /** A read of the product's stock through the group commit, as an actor's load makes it. */
  const read = (name: string, during: Promise<void> = Promise.resolve()) =>
    groupCommit.read(async () => {
      events.push(`${name} starts`);
      await during;
      const view = await loadProductView(app.db, productId);
      events.push(`${name} ends`);
      return view?.stock;
    });
  return { groupCommit, registry, submit, read };
}

test.serial(
  'a read asked for while a batch is in flight starts after the batch committed and told its actors',
  async (t) => {
    const events: string[] = [];
    const { groupCommit, registry, submit, read } = await setup(events);
    try {
      const transaction = gate();
      const placed = submit(transaction.wait());
      while (!events.includes('batch transaction')) await turns(1);
      const reading = read('read');
      await turns(5);
      await new Promise((resolve) => setTimeout(resolve, 50)); // a read that does not wait has started by now
      transaction.open();
      t.is(await placed, 'written');
      t.is(await reading, 8, 'the read saw the batch');
      await groupCommit.drain();
      t.deepEqual(events, ['batch transaction', 'batch committed', 'read starts', 'read ends']);
    } finally {
      registry.stop();
    }
  },
);

test.serial(
  'a batch waits for the reads under way; a read asked for after the batch was taken waits for the batch',
  async (t) => {
    const events: string[] = [];
    const { groupCommit, registry, submit, read } = await setup(events);
    try {
      const firstRead = gate();
      const first = read('first read', firstRead.wait());
      await turns(1);
      const placed = submit(Promise.resolve());
      await turns(2); // the flush loop took the batch: it waits for the first read
      const second = read('second read');
      await turns(5);
      await new Promise((resolve) => setTimeout(resolve, 50)); // a batch or read that does not wait has started
      t.deepEqual(events, ['first read starts']);
      firstRead.open();
      t.is(await first, 10, 'the first read ran before the batch');
      t.is(await placed, 'written');
      t.is(await second, 8, 'the second read saw the batch');
      await groupCommit.drain();
      t.deepEqual(events, [
        'first read starts',
        'first read ends',
        'batch transaction',
        'batch committed',
        'second read starts',
        'second read ends',
      ]);
    } finally {
      registry.stop();
    }
  },
);
