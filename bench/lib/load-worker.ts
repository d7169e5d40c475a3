// autocannon in a worker thread: a load generator that shares the process (so the bench can sample the service's
// event loop from inside) but not the service's event loop, as real clients never do. Runs one autocannon load
// over `paths` (each request takes one at random; a POST also one of `bodies`) and posts its result back.
import { parentPort, Worker, workerData } from 'node:worker_threads';
import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  connections: number;
  /** seconds */
  duration: number;
  paths: string[];
  /** Requests per second over all connections (autocannon's overallRate); absent: as fast as they answer. */
  rate?: number;
  /** GET when absent. */
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** A POST's JSON bodies, one taken at random per request. */
  bodies?: string[];
  /**
   * The generator thread's nice value (Linux: per thread; pid 0 in setPriority is the calling thread), so that
   * on a shared machine it yields a core to the service's threads, as clients on other machines would; absent or
   * 0: the same priority as the service.
   */
  nice?: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  total: number;
  p50Ms: number;
  p99Ms: number;
  /** non-2xx answers, socket errors and timeouts */
  failed: number;
}

type WorkerMessage = { started: true } | { result: LoadResult };

/**
 * Runs the load in a worker thread; resolves with its summary. `onStarted` is called when the load itself
 * begins, after the worker's start-up (its thread, the tsx loader, autocannon's modules), which a measurement of
 * the service must leave out: it is the generator's work, not the service's.
 */
export function loadInWorker(options: LoadOptions, onStarted?: () => void): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    // A worker does not inherit the tsx loader: it registers it, then loads this TypeScript file. Its nice value
    // is set first, so that its start-up already yields to the service.
    const bootstrap = `const { workerData } = require('node:worker_threads');
      if (workerData.nice) require('node:os').setPriority(0, workerData.nice);
      import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(import.meta.url)}); })`;
    const worker = new Worker(bootstrap, { eval: true, workerData: options });
    worker.on('message', (message: WorkerMessage) => {
      if ('started' in message) onStarted?.();
      else resolve(message.result);
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`load worker exited with ${code}`));
    });
  });
}

if (parentPort && workerData) {
  const o = workerData as LoadOptions;
  parentPort.postMessage({ started: true } satisfies WorkerMessage);
  // In a worker thread autocannon returns its raw histograms; aggregateResult turns them into the usual result.
  const raw = await autocannon({
    url: o.url,
    connections: o.connections,
    duration: o.duration,
    ...(o.rate ? { overallRate: o.rate } : {}),
    headers: o.headers,
    requests: [
      {
        method: o.method ?? 'GET',
        setupRequest: (req) => ({
          ...req,
          path: o.paths[Math.floor(Math.random() * o.paths.length)],
          ...(o.bodies && { body: o.bodies[Math.floor(Math.random() * o.bodies.length)] }),
        }),
      },
    ],
  });
  // (@types/autocannon does not declare aggregateResult, which autocannon exports for exactly this)
  const aggregate = (
    autocannon as unknown as { aggregateResult(results: unknown[], opts: object): autocannon.Result }
  ).aggregateResult;
  const r = aggregate([raw], { url: o.url, connections: o.connections });
  const result: LoadResult = {
    requestsPerSecond: r.requests.total / o.duration,
    total: r.requests.total,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    failed: r.non2xx + r.errors + r.timeouts,
  };
  parentPort.postMessage({ result } satisfies WorkerMessage);
}
