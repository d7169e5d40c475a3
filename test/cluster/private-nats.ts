// A private nats-server with JetStream on a free port and a store directory of its own, for tests that stop
// and restart NATS: the shared server at 127.0.0.1:4222 serves other tests at the same time and is never
// disturbed. `stop()` kills it (-9, as a crash), `start()` brings it back on the same port and store; `pause()`
// and `resume()` stall it and let it go on. It dies with the test process, also when that is killed (-9).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { until } from '../helpers/until';

export const NATS_SERVER = '/usr/sbin/nats-server';

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
export const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/**
 * A shell that kills the server once this process is gone, also after SIGKILL (no 'exit' event then, so the
 * handler in startPrivateNats cannot run); it ends by itself when the server ends first.
 */
function killWithThisProcess(serverPid: number): void {
  const script =
    'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 0.5; done; ' +
    'kill -0 "$1" 2>/dev/null || kill -9 "$2" 2>/dev/null';
  spawn('sh', ['-c', script, 'nats-watchdog', String(process.pid), String(serverPid)], {
    stdio: 'ignore',
    detached: true,
  }).unref();
}

export interface PrivateNats {
  url: string;
  port: number;
  /** Starts the server (again, on the same port and store); resolves once its port accepts connections. */
  start(): Promise<void>;
  /** kill -9; resolves once the process has exited. */
  stop(): Promise<void>;
  /** SIGSTOP: the server keeps its connections but answers nothing (a stalled server) until `resume()`. */
  pause(): void;
  /** SIGCONT: it works through what arrived meanwhile (nothing when it is not running). */
  resume(): void;
  /** Deletes its store while it is stopped: the next `start()` is a server that lost everything. */
  wipeStore(): void;
  /** Stops it if running and deletes its store. */
  close(): Promise<void>;
  /** The running server's process id (null when it is not running). */
  pid(): number | null;
}

/** `maxPayload`: the server's message limit in bytes (its `max_payload`; 1 MB by default). */
export async function startPrivateNats(options: { maxPayload?: number } = {}): Promise<PrivateNats> {
  if (!fs.existsSync(NATS_SERVER)) throw new Error(`${NATS_SERVER} is needed (apt-get install nats-server)`);
  const port = await freePort();
  const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'nats-private-'));
  // Settings without a command-line flag go in a configuration file kept in the store's directory.
  const configFile = path.join(storeDir, '..', `${path.basename(storeDir)}.conf`);
  const config = options.maxPayload ? ['-c', configFile] : [];
  if (options.maxPayload) fs.writeFileSync(configFile, `max_payload: ${options.maxPayload}\n`);
  let child: ChildProcess | null = null;
  let exited: Promise<unknown> = Promise.resolve();

  const nats: PrivateNats = {
    url: `nats://127.0.0.1:${port}`,
    port,
    async start() {
      if (child) throw new Error('the private nats-server is running');
      const started = spawn(
        NATS_SERVER,
        [...config, '-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir],
        {
          stdio: 'ignore',
        },
      );
      child = started;
      exited = new Promise((resolve) => started.once('exit', resolve));
      if (started.pid !== undefined) killWithThisProcess(started.pid);
      const gone = () => started.exitCode !== null || started.signalCode !== null;
      // Our process must be the one answering: should another have taken the port since freePort() found it
      // free, nats-server exits at once and the test fails here rather than talk to a stranger.
      await until(
        async () => {
          if (gone())
            throw new Error(`nats-server on port ${port} exited (${started.exitCode ?? started.signalCode})`);
          return accepts(port);
        },
        10_000,
        () => `nats-server on port ${port} did not start`,
      );
      if (gone())
        throw new Error(`nats-server on port ${port} exited (${started.exitCode ?? started.signalCode})`);
    },
    async stop() {
      if (!child) return;
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
      child = null;
    },
    pause() {
      if (!child?.kill('SIGSTOP')) throw new Error('the private nats-server is not running');
    },
    resume() {
      child?.kill('SIGCONT');
    },
    wipeStore() {
      if (child) throw new Error('stop the private nats-server before wiping its store');
      fs.rmSync(storeDir, { recursive: true, force: true });
      fs.mkdirSync(storeDir);
    },
    async close() {
      await nats.stop();
      fs.rmSync(storeDir, { recursive: true, force: true });
      fs.rmSync(configFile, { force: true });
    },
    pid: () => child?.pid ?? null,
  };
  // Killed with the test process, should it die without cleaning up (a timeout).
  process.once('exit', () => child?.kill('SIGKILL'));
  await nats.start();
  return nats;
}
