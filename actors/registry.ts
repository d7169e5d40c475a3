// The registry of product stock actors: one actor per product, created on first use and dropped when it
// passivates (idle, nothing reserved) or fails. Activation is synchronous (createActor + start; the
// actor loads its product itself and defers commands meanwhile), so concurrent first requests for a
// product always find the same actor. Every actor is subscribed with an `error` observer: an actor
// error fails its outstanding commands instead of crashing the process. The registry does no I/O of its
// own: it is given the function that reads a product (lib/inventory passes its repository's).
import { createActor, fromPromise, type Actor } from 'xstate';
import type { Logger } from '../lib/logger';
import type { JudgedStockChange, ProductView } from './stock-rules';
import {
  productStockMachine,
  type LoadedView,
  type ReserveReply,
  type StockCommand,
} from './product-stock-machine';

type StockActor = Actor<typeof productStockMachine>;

interface Entry {
  productId: number;
  actor: StockActor;
  /** Commands awaiting a reply, failed if the actor stops or errors first. */
  outstanding: Set<{ fail(err: unknown): void }>;
}

/**
 * A reservation held in one actor's memory, to be COMMITTED or RELEASEd to that same actor; judged on
 * the view's `catalogVersion`, which the guarded UPDATE requires.
 */
export interface Reservation extends JudgedStockChange {
  entry: Entry;
}

export type ReserveResult =
  { ok: true; product: ProductView; reservation: Reservation } | Extract<ReserveReply, { ok: false }>;

export class ActorStoppedError extends Error {
  constructor(productId: number) {
    super(`The stock actor of product ${productId} stopped`);
  }
}

/** Reads a product's current view from the store (null when there is no such product). */
export type ProductLoader = (productId: number) => Promise<ProductView | null>;

export interface RegistryOptions {
  load: ProductLoader;
  logger: Logger;
  idleMs: number;
  freshMs?: number;
}

/**
 * One command awaiting its actor's answer. A ready actor answers within `send` (xstate processes the event
 * synchronously): the answer is then kept here and returned as is; otherwise `wait()` hands out a promise.
 * Its methods are called through arrow functions written inline where the command is built: a function kept
 * in a named binding would be renamed at creation by the loader (tsx's keepNames: one defineProperty each).
 */
class Asked<T> {
  private state: 'waiting' | 'answered' | 'failed' = 'waiting';
  private outcome: unknown;
  private settle: { resolve: (value: T) => void; reject: (err: unknown) => void } | undefined;

  constructor(private readonly entry: Entry) {
    entry.outstanding.add(this);
  }

  answer(value: T): void {
    this.entry.outstanding.delete(this);
    if (this.settle) return this.settle.resolve(value);
    this.state = 'answered';
    this.outcome = value;
  }

  fail(err: unknown): void {
    this.entry.outstanding.delete(this);
    if (this.settle) return this.settle.reject(err);
    this.state = 'failed';
    this.outcome = err;
  }

  /** The answer if it came already, else a promise of it. */
  result(): T | Promise<T> {
    if (this.state === 'answered') return this.outcome as T;
    if (this.state === 'failed') return Promise.reject(this.outcome);
    return new Promise<T>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
  }
}

export function createStockRegistry(options: RegistryOptions) {
  const log = options.logger.child({ component: 'StockRegistry' });
  const freshMs = options.freshMs ?? 100;
  const entries = new Map<number, Entry>();
  const machine = productStockMachine.provide({
    actors: {
      loadProduct: fromPromise<LoadedView, { productId: number }>(async ({ input }) => {
        const view = await options.load(input.productId);
        return { view, at: Date.now() };
      }),
    },
  });

  function failAll(entry: Entry, err: unknown): void {
    for (const asked of [...entry.outstanding]) asked.fail(err);
  }

  function drop(entry: Entry): void {
    if (entries.get(entry.productId) === entry) entries.delete(entry.productId);
  }

  function activate(productId: number): Entry {
    const existing = entries.get(productId);
    if (existing && existing.actor.getSnapshot().status === 'active') return existing;
    const actor = createActor(machine, { input: { productId, idleMs: options.idleMs, freshMs } });
    const entry: Entry = { productId, actor, outstanding: new Set() };
    entries.set(productId, entry);
    actor.subscribe({
      complete: () => {
        drop(entry);
        failAll(entry, new ActorStoppedError(productId));
      },
      error: (err) => {
        log.error({ err }, `Stock actor of product ${productId} failed`);
        drop(entry);
        failAll(entry, err);
      },
    });
    actor.start();
    return entry;
  }

  /**
   * Sends a command and returns the actor's answer: as is when the actor decided within `send` (a ready
   * actor: no promise and no microtask per command, and an order of 3 items asks 3 actors), as a promise
   * when it deferred the command (loading or writing).
   */
  function ask<T>(
    entry: Entry,
    build: (reply: (value: T) => void, fail: (err: unknown) => void) => StockCommand,
  ): T | Promise<T> {
    const asked = new Asked<T>(entry);
    entry.actor.send(
      build(
        (value) => asked.answer(value),
        (err) => asked.fail(err),
      ),
    );
    return asked.result();
  }

  function reserved(reply: ReserveReply, entry: Entry, quantity: number): ReserveResult {
    if (!reply.ok) return reply;
    const { product } = reply;
    const reservation = {
      productId: entry.productId,
      quantity,
      catalogVersion: product.catalogVersion,
      entry,
    };
    return { ok: true, product, reservation };
  }

  /** Sends to the actor that holds the reservation, if it still lives (a new one reads the database afresh). */
  function tell(entry: Entry | undefined, command: StockCommand): void {
    if (entry && entry.actor.getSnapshot().status === 'active') entry.actor.send(command);
  }

  return {
    /**
     * Reserves `quantity` of the product in its actor's memory. The result is returned synchronously when
     * the actor was ready to decide (the common case), else as a promise (it is loading the product).
     */
    reserve(productId: number, quantity: number): ReserveResult | Promise<ReserveResult> {
      const entry = activate(productId);
      const reply = ask<ReserveReply>(entry, (done, fail) => ({
        type: 'RESERVE',
        quantity,
        at: Date.now(),
        reply: done,
        fail,
      }));
      return reply instanceof Promise
        ? reply.then((answer) => reserved(answer, entry, quantity))
        : reserved(reply, entry, quantity);
    },
    release(reservation: Reservation): void {
      tell(reservation.entry, { type: 'RELEASE', quantity: reservation.quantity });
    },
    committed(reservation: Reservation): void {
      tell(reservation.entry, { type: 'COMMITTED', quantity: reservation.quantity });
    },
    /**
     * A committed batch's reservations: one COMMITTED per actor with its units summed, so a batch of 32
     * orders of one hot product is one message (and one machine step), not 32.
     */
    committedAll(reservations: Reservation[]): void {
      const totals = new Map<Entry, number>();
      for (const { entry, quantity } of reservations) totals.set(entry, (totals.get(entry) ?? 0) + quantity);
      for (const [entry, quantity] of totals) tell(entry, { type: 'COMMITTED', quantity });
    },
    /**
     * The product changed behind the actor's back (also: a cancellation gave stock back): re-read it before the
     * next decision. Only an active actor needs to know.
     */
    reload(productId: number): void {
      tell(entries.get(productId), { type: 'RELOAD' });
    },
    /**
     * Runs `run` (a product write) with no reservation decided for the product meanwhile; the actor reads the
     * product again afterwards. Resolves once `run` has: a read that fails after it drops the actor (the next
     * command loads it anew) but does not turn the written change into an error.
     */
    async exclusive(productId: number, run: () => Promise<void>): Promise<void> {
      const entry = activate(productId);
      await ask<void>(entry, (done, fail) => ({ type: 'EXCLUSIVE', run, reply: () => done(), fail }));
    },
    /** Every active actor re-reads before its next decision (after missed change events). */
    reloadAll(): void {
      for (const entry of entries.values()) tell(entry, { type: 'RELOAD' });
    },
    /**
     * Stops the actors of the products `belongs` picks that hold nothing (their shard moved to another
     * instance); one still holding a reservation re-reads and passivates once idle. Returns how many stopped.
     */
    evict(belongs: (productId: number) => boolean): number {
      let stopped = 0;
      for (const entry of [...entries.values()]) {
        if (!belongs(entry.productId)) continue;
        if (entry.outstanding.size === 0 && entry.actor.getSnapshot().context.reserved === 0) {
          entry.actor.stop();
          drop(entry);
          stopped++;
        } else {
          tell(entry, { type: 'RELOAD' });
        }
      }
      return stopped;
    },
    activeCount: () => entries.size,
    /** The actor's current view (tests and diagnostics). */
    inspect(productId: number): { stock: number; reserved: number; status: string } | null {
      const entry = entries.get(productId);
      if (!entry) return null;
      const { context, value } = entry.actor.getSnapshot();
      // The top-level state (kept general: a state with substates reports its own name).
      const status = typeof value === 'string' ? value : Object.keys(value)[0];
      return { stock: context.product?.stock ?? 0, reserved: context.reserved, status };
    },
    stop(): void {
      for (const entry of [...entries.values()]) {
        entry.actor.stop();
        drop(entry);
        failAll(entry, new ActorStoppedError(entry.productId));
      }
    },
  };
}

export type StockRegistry = ReturnType<typeof createStockRegistry>;
