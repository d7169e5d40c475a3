// The inventory: how a request to take stock (an order) becomes committed, with its stock deducted, and
// how stock comes back. Two modes with the same API and guarantees (config.inventoryMode): `actor`
// (per-product stock actors + group commit, the default) and `transactional` (one transaction per
// request with row locks, the baseline). The inventory knows nothing of orders: the caller passes the
// writer of its own rows, which runs inside the transaction that deducts the stock.
import type { Db, Trx } from '../db';
import type { ProductChangeScope } from '../events';
import type { ProductView, StockChange } from '../../actors/stock-rules';

export type { ProductView, StockChange } from '../../actors/stock-rules';

/** A request to take stock: the lines and whatever the writer needs to record it (`details`). */
export interface StockRequest<D> {
  items: StockChange[];
  details: D;
}

/** A line of a request once decided: the product as it was judged (price and name snapshots) and the quantity. */
export interface DecidedLine {
  product: ProductView;
  quantity: number;
}

/** A request whose every line was accepted: ready to be written. */
export interface DecidedRequest<D> {
  details: D;
  lines: DecidedLine[];
}

/** The caller's half of placing: checks and writes its own rows (orders) for decided requests. */
export interface StockWriter<D, R> {
  /**
   * The writer's name: in cluster mode a request travels to the owner of its first product as JSON (its
   * `details` must be JSON) and the owner runs its own writer of this name.
   */
  readonly name: string;
  /** Refuses (throws) a decided request before anything is written, so it never fails a whole batch. */
  check(request: DecidedRequest<D>): void;
  /** Writes `batch` inside the transaction that deducts its stock; one result per request, in order. */
  write(trx: Trx, batch: DecidedRequest<D>[], now: Date): Promise<R[]>;
  /**
   * After the connection was lost during COMMIT: whether `written` (what `write` returned) is in the
   * database. One transaction wrote it all, so it is all there or none of it.
   */
  committed(db: Db, written: R[]): Promise<boolean>;
  /**
   * The most bytes the result for `request` can take as JSON. In cluster mode an owner answers the requests of
   * one message in one reply, and NATS refuses a message over its `max_payload`: the caller sizes its messages
   * by this so that the reply always fits (without it, only the requests' own size counts).
   */
  resultBytesAtMost?(request: StockRequest<D>): number;
}

/**
 * Thrown by a writer inside the transaction when some requests of a batch must not be written (their
 * error says why); the transaction rolls back and the other requests decide again.
 */
export class WriterRefused extends Error {
  constructor(readonly refused: Array<{ request: DecidedRequest<unknown>; error: Error }>) {
    super(`The writer refused ${refused.length} request(s)`);
    this.name = 'WriterRefused';
  }
}

export interface Inventory {
  readonly mode: 'actor' | 'transactional';
  /** Decides, deducts and writes one request; resolves with the writer's result after its transaction committed. */
  place<D, R>(request: StockRequest<D>, writer: StockWriter<D, R>): Promise<R>;
  /** Gives `changes` back inside the caller's transaction (a cancellation); the status follows the stock. */
  restore(trx: Trx, changes: StockChange[], now: Date): Promise<void>;
  /**
   * After the transaction of `restore` committed: the actors adopt the stock, the catalog hears of it. Never
   * rejects: a failed announcement is logged, since the cancellation it follows stands.
   */
  restored(changes: StockChange[]): Promise<void>;
  /**
   * Runs a product write (a seller's stock PATCH with the edit that goes along, a soft delete) serialised with that
   * product's orders. `write` is guarded SQL (it never lets stock go below 0: one statement, or one transaction with
   * the catalog edit); the actor re-reads the product after it.
   */
  changeProduct<T>(productId: number, write: () => Promise<T>): Promise<T>;
  /** The in-memory view of a product's actor, or null when none is active (diagnostics, tests). */
  inspect(productId: number): { stock: number; reserved: number; status: string } | null;
  /** Product actors held in memory now (0 in transactional mode): memory follows this. */
  activeActors(): number;
  /** Finishes in-flight work (pending group commits) and stops the actors. */
  stop(): Promise<void>;
}

/**
 * Work done after a commit that changed products, or a refusal that showed them changed elsewhere: the catalog
 * drops its copies (awaited). `scope` 'stock': this inventory's own stock write (an order, a cancellation);
 * absent: anything may have changed (a guard refusal).
 */
export type AnnounceChanges = (productIds: number[], scope?: ProductChangeScope) => Promise<void>;
