// Child processes of the benchmark: the real service (`lib/server.ts`, as `npm start` runs it) and the
// bare Koa baseline, each on a free port, so the load generator never shares an event loop with them.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The node flags `npm start` gives the server (package.json's start script, e.g. the young generation's size),
 * so a benchmark measures the service as it is run; `--import tsx` is left to the caller.
 */
export function startScriptFlags(): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const words = pkg.scripts.start.split(/\s+/);
  return words.filter(
    (word, i) => word.startsWith('--') && word !== '--import' && words[i - 1] !== '--import',
  );
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface Child {
  url: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

async function waitFor(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${url}: the process exited with ${child.exitCode}`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not become ready in ${timeoutMs} ms`);
}

export async function startChild(
  script: string,
  env: Record<string, string>,
  readyPath: string,
  /** Extra node flags, e.g. `--cpu-prof --cpu-prof-dir=bench/profiles` to profile the child. */
  nodeArgs: string[] = [],
): Promise<Child> {
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', path.join(ROOT, script)], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(url + readyPath, child, 60_000);
  return {
    url,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
