// Per-request context kept in AsyncLocalStorage, so any code a request runs (also async work it starts,
// such as notification delivery) can log the request id without it being passed around.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

export function runWithContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** Runs `fn` (and the async work it starts) outside any request's context. */
export function outsideRequest<T>(fn: () => T): T {
  return storage.exit(fn);
}

export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}
