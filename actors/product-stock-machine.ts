// One product's stock, as an XState v5 actor (Akka/Orleans style: one actor per entity, activated on
// first use, passivated when idle). It serialises every stock command for the product in memory:
// reservations are decided here against `stock - reserved`, one at a time, without touching the
// database; the group commit (lib/inventory) writes them, guarded in SQL, and reports back COMMITTED or
// RELEASE. A reservation that fits the stock but not what others hold now waits for one of those to settle
// (or for a fresh read) and is decided again: a refusal never counts units a request may yet give back (a cart
// refused for another product, a failed batch), as a row lock makes a conventional transaction wait for them.
// I/O happens only in the invoked `loadProduct` / `runExclusive` promise actors; commands that arrive
// meanwhile are deferred and replayed in arrival order, except the news of a commit (COMMITTED): the commit
// is already in the database, and the read under way may or may not have seen it, so its reservation is
// settled at once and the product is read again afterwards (a read that starts after the news has the commit).
// Replaying it on the read instead would count a commit the read had seen twice. Stock given back by a
// cancellation is not added to the view either, for the same reason: its commit is not ordered with the
// actor's reads, so the actor re-reads the product (RELOAD) instead. During I/O one RELOAD waits in order with
// the commands and further ones add nothing, so a burst of cancellations costs one read, and the commands that
// came before it are decided on the read under way (a stream of RELOADs cannot hold them back).
import { assign, enqueueActions, fromPromise, setup } from 'xstate';
import { statusFollowingStock } from './product-status';
import { judgeLine, type ProductView, type RefusalReason } from './stock-rules';

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
  /**
   * The view may be stale (a guard refused, the product was edited, a cancellation gave stock back): re-read
   * before the next decision.
   */
  | { type: 'RELOAD' }
  /**
   * Run a product write (stock PATCH, delete) with no decision in between, then read the product again. The caller
   * is answered as soon as the write is done: a failing read after it does not make a written change an error.
   */
  | {
      type: 'EXCLUSIVE';
      run: () => Promise<void>;
      reply: () => void;
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
  /** Whether the actor held a reservation at some point of the current idle period (see `ready`). */
  heldThisPeriod: boolean;
  loadedAt: number;
  /** A commit's news (COMMITTED) arrived during the read or write under way: read again once it is done. */
  readAgain: boolean;
  /** Commands that arrived during I/O, replayed in order afterwards. */
  pending: StockCommand[];
  /**
   * Reservations that fit the stock but not what other requests hold now: decided again when a reservation
   * settles (RELEASE, COMMITTED) or the product is read again, so a refusal never counts units another request
   * may yet give back.
   */
  parked: ReserveCommand[];
  current: Extract<StockCommand, { type: 'EXCLUSIVE' }> | null;
}

export interface ProductStockInput {
  productId: number;
  idleMs: number;
  freshMs: number;
}

const DEFERRED = ['RESERVE', 'RELEASE', 'EXCLUSIVE'] as const;

const available = (context: ProductStockContext) => (context.product?.stock ?? 0) - context.reserved;

type ReserveCommand = Extract<StockCommand, { type: 'RESERVE' }>;
type ExclusiveCommand = Extract<StockCommand, { type: 'EXCLUSIVE' }>;

/** The product after `delta` units of stock left (< 0) or came back (> 0); the status follows the stock. */
function withStockChange(product: ProductView | null, delta: number): ProductView | null {
  if (!product) return null;
  const stock = product.stock + delta;
  return { ...product, stock, status: statusFollowingStock(product.status, stock) };
}

const stockSetup = setup({
  types: {
    context: {} as ProductStockContext,
    events: {} as StockCommand,
    input: {} as ProductStockInput,
  },
  actors: {
    // Provided by the registry (it is given the loader); this default fails loudly if it was not.
    loadProduct: fromPromise<LoadedView, { productId: number }>(async () => {
      throw new Error('loadProduct was not provided');
    }),
    runExclusive: fromPromise<void, { run: () => Promise<void> }>(({ input }) => input.run()),
  },
  delays: {
    // A product that does not exist (an order for an unknown id) is nothing worth keeping in memory: its
    // actor stops as soon as the commands it deferred are answered, so unknown ids cost no lasting state.
    idle: ({ context }) => (context.product ? context.idleMs : 0),
  },
  guards: {
    fits: ({ context }, params: { quantity: number }) =>
      judgeLine(context.product, params.quantity, available(context)) === null,
    viewIsStale: ({ context }, params: { at: number }) => params.at - context.loadedAt > context.freshMs,
    /** It would fit were every reservation held now given back. */
    mayFitOnceSettled: ({ context }, params: { quantity: number }) =>
      context.reserved > 0 && judgeLine(context.product, params.quantity) === null,
    /** Nothing reserved or waiting now, and nothing reserved at any time since the idle period began. */
    idleAllPeriod: ({ context }) =>
      context.reserved === 0 &&
      context.pending.length === 0 &&
      context.parked.length === 0 &&
      !context.heldThisPeriod,
    readAgain: ({ context }) => context.readAgain,
    anyParked: ({ context }) => context.parked.length > 0,
    reloadQueued: ({ context }) => context.pending.some((command) => command.type === 'RELOAD'),
  },
  actions: {
    defer: assign({
      pending: ({ context }, params: { command: StockCommand }) => [...context.pending, params.command],
    }),
    park: assign({
      parked: ({ context }, params: { command: ReserveCommand }) => [...context.parked, params.command],
    }),
    // Decided again, in the order they were asked, before anything that arrives after this step.
    replayParked: enqueueActions(({ context, enqueue }) => {
      if (context.parked.length === 0) return;
      for (const command of context.parked) enqueue.raise(command);
      enqueue.assign({ parked: [] });
    }),
    replayDeferred: enqueueActions(({ context, enqueue }) => {
      if (context.pending.length === 0) return;
      for (const command of context.pending) enqueue.raise(command);
      enqueue.assign({ pending: [] });
    }),
    adoptLoaded: assign((_, params: LoadedView) => ({ product: params.view, loadedAt: params.at })),
    reserve: assign(({ context }, params: { quantity: number }) => ({
      reserved: context.reserved + params.quantity,
      heldThisPeriod: true,
    })),
    // A new idle period begins: it counts as held if the actor holds something as it begins.
    beginIdlePeriod: assign({ heldThisPeriod: ({ context }) => context.reserved > 0 }),
    release: assign({
      reserved: ({ context }, params: { quantity: number }) =>
        Math.max(0, context.reserved - params.quantity),
    }),
    commit: assign(({ context }, params: { quantity: number }) => ({
      product: withStockChange(context.product, -params.quantity),
      reserved: Math.max(0, context.reserved - params.quantity),
    })),
    /** During a read: the units are no longer reserved (they are in the database); the stock comes from a re-read. */
    settleDuringRead: assign(({ context }, params: { released: number }) => ({
      reserved: Math.max(0, context.reserved - params.released),
      readAgain: true,
    })),
    // The read about to start comes after every RELOAD waiting: they need no read of their own.
    clearReadAgain: assign({
      readAgain: false,
      pending: ({ context }) => context.pending.filter((command) => command.type !== 'RELOAD'),
    }),
    takeExclusive: assign({ current: (_, params: { command: ExclusiveCommand }) => params.command }),
    // Replies hand the decision back to the waiting caller (resolving its promise); no I/O here.
    replyReserved: ({ context }, params: { command: ReserveCommand }) => {
      params.command.reply({ ok: true, product: context.product! });
    },
    replyRefused: ({ context }, params: { command: ReserveCommand }) => {
      const { command } = params;
      const reason = judgeLine(context.product, command.quantity, available(context)) ?? 'INSUFFICIENT_STOCK';
      command.reply({ ok: false, reason, product: context.product });
    },
    replyExclusive: enqueueActions(({ context, enqueue }) => {
      context.current?.reply();
      enqueue.assign({ current: null });
    }),
    failExclusive: enqueueActions(({ context, enqueue }, params: { error: unknown }) => {
      context.current?.fail(params.error);
      enqueue.assign({ current: null });
    }),
    failPending: ({ context }, params: { error: unknown }) => {
      for (const command of context.pending) if ('fail' in command) command.fail(params.error);
      for (const command of context.parked) command.fail(params.error);
    },
  },
});

// While loading or writing, every command waits its turn (a RELOAD at most once); the news of a commit settles at
// once and makes the actor read again when the I/O is done.
const duringRead = {
  ...Object.fromEntries(
    DEFERRED.map((type) => [
      type,
      {
        actions: {
          type: 'defer' as const,
          params: ({ event }: { event: StockCommand }) => ({ command: event }),
        },
      },
    ]),
  ),
  COMMITTED: {
    actions: {
      type: 'settleDuringRead' as const,
      params: ({ event }: { event: Extract<StockCommand, { type: 'COMMITTED' }> }) => ({
        released: event.quantity,
      }),
    },
  },
  // One RELOAD waits in order with the commands (those before it are decided on the read under way, those
  // after it on a read that starts after it); more RELOADs meanwhile add nothing.
  RELOAD: [
    { guard: 'reloadQueued' as const },
    {
      actions: {
        type: 'defer' as const,
        params: ({ event }: { event: StockCommand }) => ({ command: event }),
      },
    },
  ],
};

export const productStockMachine = stockSetup.createMachine({
  id: 'productStock',
  context: ({ input }) => ({
    productId: input.productId,
    idleMs: input.idleMs,
    freshMs: input.freshMs,
    product: null,
    reserved: 0,
    heldThisPeriod: false,
    loadedAt: 0,
    readAgain: false,
    pending: [],
    parked: [],
    current: null,
  }),
  initial: 'loading',
  states: {
    loading: {
      description: 'Reading the product and its stock from the database',
      invoke: {
        src: 'loadProduct',
        input: ({ context }) => ({ productId: context.productId }),
        onDone: [
          // The read may have missed a commit or a change whose news came meanwhile: read again.
          {
            guard: 'readAgain',
            target: 'loading',
            reenter: true,
            actions: 'clearReadAgain',
          },
          { target: 'ready', actions: { type: 'adoptLoaded', params: ({ event }) => event.output } },
        ],
        onError: {
          target: 'failed',
          actions: { type: 'failPending', params: ({ event }) => ({ error: event.error }) },
        },
      },
      on: duringRead,
    },
    ready: {
      description:
        'Deciding commands in memory, one at a time; passivates after a whole idle period (`idleMs`) with nothing reserved',
      entry: ['replayParked', 'replayDeferred', 'beginIdlePeriod'],
      // Commands are targetless transitions: no exit, entry or timer per command (an order's RESERVE and
      // COMMITTED each cost one machine step). One timer per idle period decides: an actor that held nothing
      // for the whole period passivates, any other begins the next period. So an actor passivates between
      // `idleMs` and twice that after it last held anything.
      after: {
        idle: [
          { guard: 'idleAllPeriod', target: '#productStock.passivated' },
          { target: 'ready', reenter: true },
        ],
      },
      on: {
        RESERVE: [
          {
            guard: { type: 'fits', params: ({ event }) => ({ quantity: event.quantity }) },
            actions: [
              { type: 'reserve', params: ({ event }) => ({ quantity: event.quantity }) },
              { type: 'replyReserved', params: ({ event }) => ({ command: event }) },
            ],
          },
          // It does not fit: re-read a stale view before refusing; wait for the reservations held now to settle
          // when it would fit without them (one may be given back: a cart refused for another product, a failed
          // batch); else refuse.
          {
            guard: { type: 'viewIsStale', params: ({ event }) => ({ at: event.at }) },
            target: 'loading',
            actions: { type: 'defer', params: ({ event }) => ({ command: event }) },
          },
          {
            guard: { type: 'mayFitOnceSettled', params: ({ event }) => ({ quantity: event.quantity }) },
            actions: { type: 'park', params: ({ event }) => ({ command: event }) },
          },
          { actions: { type: 'replyRefused', params: ({ event }) => ({ command: event }) } },
        ],
        // A settled reservation decides the waiting ones again (guarded: most steps have none waiting).
        RELEASE: [
          {
            guard: 'anyParked',
            actions: [
              { type: 'release', params: ({ event }) => ({ quantity: event.quantity }) },
              'replayParked',
            ],
          },
          { actions: { type: 'release', params: ({ event }) => ({ quantity: event.quantity }) } },
        ],
        COMMITTED: [
          {
            guard: 'anyParked',
            actions: [
              { type: 'commit', params: ({ event }) => ({ quantity: event.quantity }) },
              'replayParked',
            ],
          },
          { actions: { type: 'commit', params: ({ event }) => ({ quantity: event.quantity }) } },
        ],
        RELOAD: { target: 'loading' },
        EXCLUSIVE: {
          target: 'writing',
          actions: { type: 'takeExclusive', params: ({ event }) => ({ command: event }) },
        },
      },
    },
    writing: {
      description: 'Running a product write (stock PATCH, delete) serialised with the orders',
      invoke: {
        src: 'runExclusive',
        input: ({ context }) => ({ run: context.current!.run }),
        // The write is done: its caller is answered now, and the product is read again before the next decision.
        // That read starts after the write and after any commit whose news came meanwhile, so it sees them all.
        onDone: { target: 'loading', actions: ['replyExclusive', 'clearReadAgain'] },
        // The write failed; its effect is unknown to us, so re-read before deciding anything.
        onError: {
          target: 'loading',
          actions: [
            { type: 'failExclusive', params: ({ event }) => ({ error: event.error }) },
            'clearReadAgain',
          ],
        },
      },
      on: duringRead,
    },
    failed: { type: 'final', description: 'Loading failed; the registry drops the actor' },
    passivated: { type: 'final', description: 'Idle with nothing reserved; memory released' },
  },
});
