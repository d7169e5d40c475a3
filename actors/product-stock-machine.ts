// One product's stock, as an XState v5 actor (Akka/Orleans style: one actor per entity, activated on
// first use, passivated when idle). It serialises every stock command for the product in memory:
// reservations are decided here against `stock - reserved`, one at a time, without touching the
// database; the order committer writes them (guarded in SQL) and reports back COMMITTED or RELEASE.
// I/O happens only in the invoked `loadProduct` / `runExclusive` promise actors; commands that arrive
// meanwhile are deferred and replayed in arrival order.
import { assign, enqueueActions, fromPromise, setup } from 'xstate';
import { judgeLine, type ProductView, type RefusalReason } from '../lib/inventory/stock-sql';

export type ReserveReply =
  { ok: true; product: ProductView } | { ok: false; reason: RefusalReason; product: ProductView | null };

/** A product read from the database and when (the actor's view is as fresh as `at`). */
export interface LoadedView {
  view: ProductView | null;
  at: number;
}

export type StockCommand =
  /** Reserve `quantity` for an order being placed; `at` is when it was asked (freshness of a refusal). */
  | {
      type: 'RESERVE';
      quantity: number;
      at: number;
      reply: (result: ReserveReply) => void;
      fail: (err: unknown) => void;
    }
  /** A reservation that will not be written (the order failed). */
  | { type: 'RELEASE'; quantity: number }
  /** A reservation whose deduction committed. */
  | { type: 'COMMITTED'; quantity: number }
  /** A committed transaction gave stock back (cancellation). */
  | { type: 'RESTOCKED'; quantity: number }
  /** The view may be stale (a guard refused, or the product was edited): re-read before the next decision. */
  | { type: 'RELOAD' }
  /** Run a product write (stock PATCH, delete) with no decision in between; adopt the view it returns. */
  | {
      type: 'EXCLUSIVE';
      run: () => Promise<LoadedView>;
      reply: (view: ProductView | null) => void;
      fail: (err: unknown) => void;
    };

export interface ProductStockContext {
  productId: number;
  idleMs: number;
  /** A refusal is only given on a view read at most this long ago; older views are re-read first. */
  freshMs: number;
  product: ProductView | null;
  /** Units reserved by orders whose transaction has not committed yet. */
  reserved: number;
  loadedAt: number;
  /** Commands that arrived during I/O, replayed in order afterwards. */
  pending: StockCommand[];
  current: Extract<StockCommand, { type: 'EXCLUSIVE' }> | null;
}

export interface ProductStockInput {
  productId: number;
  idleMs: number;
  freshMs: number;
}

const DEFERRED = ['RESERVE', 'RELEASE', 'COMMITTED', 'RESTOCKED', 'RELOAD', 'EXCLUSIVE'] as const;

const available = (context: ProductStockContext) => (context.product?.stock ?? 0) - context.reserved;

export const productStockMachine = setup({
  types: {
    context: {} as ProductStockContext,
    events: {} as StockCommand,
    input: {} as ProductStockInput,
  },
  actors: {
    // Provided by the registry (it owns the database); this default fails loudly if it was not.
    loadProduct: fromPromise<LoadedView, { productId: number }>(async () => {
      throw new Error('loadProduct was not provided');
    }),
    runExclusive: fromPromise<LoadedView, { run: () => Promise<LoadedView> }>(({ input }) => input.run()),
  },
  delays: {
    idle: ({ context }) => context.idleMs,
  },
  guards: {
    fits: ({ context, event }) =>
      event.type === 'RESERVE' && judgeLine(context.product, event.quantity, available(context)) === null,
    viewIsStale: ({ context, event }) =>
      event.type === 'RESERVE' && event.at - context.loadedAt > context.freshMs,
    holdsNothing: ({ context }) => context.reserved === 0 && context.pending.length === 0,
  },
  actions: {
    defer: assign({ pending: ({ context, event }) => [...context.pending, event] }),
    replayDeferred: enqueueActions(({ context, enqueue }) => {
      if (context.pending.length === 0) return;
      for (const command of context.pending) enqueue.raise(command);
      enqueue.assign({ pending: [] });
    }),
    adoptLoaded: assign(({ event }) => {
      const { view, at } = (event as unknown as { output: LoadedView }).output;
      return { product: view, loadedAt: at };
    }),
    reserve: assign({
      reserved: ({ context, event }) => context.reserved + (event as { quantity: number }).quantity,
    }),
    release: assign({
      reserved: ({ context, event }) =>
        Math.max(0, context.reserved - (event as { quantity: number }).quantity),
    }),
    commit: assign(({ context, event }) => {
      const { quantity } = event as { quantity: number };
      const product = context.product && { ...context.product, stock: context.product.stock - quantity };
      if (product && product.stock <= 0 && product.status === 'ON_SALE') product.status = 'SOLD_OUT';
      return { product, reserved: Math.max(0, context.reserved - quantity) };
    }),
    restock: assign(({ context, event }) => {
      const { quantity } = event as { quantity: number };
      const product = context.product && { ...context.product, stock: context.product.stock + quantity };
      if (product && product.stock > 0 && product.status === 'SOLD_OUT') product.status = 'ON_SALE';
      return { product };
    }),
    takeExclusive: assign({ current: ({ event }) => event as Extract<StockCommand, { type: 'EXCLUSIVE' }> }),
    // Replies hand the decision back to the waiting caller (resolving its promise); no I/O here.
    replyReserved: ({ context, event }) => {
      if (event.type === 'RESERVE') event.reply({ ok: true, product: context.product! });
    },
    replyRefused: ({ context, event }) => {
      if (event.type !== 'RESERVE') return;
      const reason = judgeLine(context.product, event.quantity, available(context)) ?? 'INSUFFICIENT_STOCK';
      event.reply({ ok: false, reason, product: context.product });
    },
    replyExclusive: enqueueActions(({ context, enqueue }) => {
      context.current?.reply(context.product);
      enqueue.assign({ current: null });
    }),
    failExclusive: enqueueActions(({ context, event, enqueue }) => {
      context.current?.fail((event as unknown as { error: unknown }).error);
      enqueue.assign({ current: null });
    }),
    failPending: ({ context, event }) => {
      const error = (event as unknown as { error: unknown }).error;
      for (const command of context.pending) if ('fail' in command) command.fail(error);
    },
  },
}).createMachine({
  id: 'productStock',
  context: ({ input }) => ({
    productId: input.productId,
    idleMs: input.idleMs,
    freshMs: input.freshMs,
    product: null,
    reserved: 0,
    loadedAt: 0,
    pending: [],
    current: null,
  }),
  initial: 'loading',
  states: {
    loading: {
      description: 'Reading the product and its stock from the database',
      invoke: {
        src: 'loadProduct',
        input: ({ context }) => ({ productId: context.productId }),
        onDone: { target: 'ready', actions: 'adoptLoaded' },
        onError: { target: 'failed', actions: 'failPending' },
      },
      on: Object.fromEntries(DEFERRED.map((type) => [type, { actions: 'defer' }])),
    },
    ready: {
      description: 'Deciding commands in memory, one at a time',
      entry: 'replayDeferred',
      after: { idle: { target: 'passivated', guard: 'holdsNothing' } },
      on: {
        // `reenter` restarts the idle timer on every command.
        RESERVE: [
          { guard: 'fits', target: 'ready', reenter: true, actions: ['reserve', 'replyReserved'] },
          { guard: 'viewIsStale', target: 'loading', actions: 'defer' },
          { target: 'ready', reenter: true, actions: 'replyRefused' },
        ],
        RELEASE: { target: 'ready', reenter: true, actions: 'release' },
        COMMITTED: { target: 'ready', reenter: true, actions: 'commit' },
        RESTOCKED: { target: 'ready', reenter: true, actions: 'restock' },
        RELOAD: { target: 'loading' },
        EXCLUSIVE: { target: 'writing', actions: 'takeExclusive' },
      },
    },
    writing: {
      description: 'Running a product write (stock PATCH, delete) serialised with the orders',
      invoke: {
        src: 'runExclusive',
        input: ({ context }) => ({ run: context.current!.run }),
        onDone: { target: 'ready', actions: ['adoptLoaded', 'replyExclusive'] },
        // The write failed; its effect is unknown to us, so re-read before deciding anything.
        onError: { target: 'loading', actions: 'failExclusive' },
      },
      on: Object.fromEntries(DEFERRED.map((type) => [type, { actions: 'defer' }])),
    },
    failed: { type: 'final', description: 'Loading failed; the registry drops the actor' },
    passivated: { type: 'final', description: 'Idle with nothing reserved; memory released' },
  },
});
