// The real service as a child process (`node --import tsx lib/server.ts`: `npm start`'s entry point without its
// V8 tuning flag, which only trades memory for speed under load), on port 0; resolves once it logs
// "Listening on", with its URL and everything it wrote.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  port: number;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  exited: Promise<number | null>;
}

/** The service's process, started: its output so far, its exit code (null when a signal ended it) and signal. */
export function spawnServerProcess(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'lib/server.ts'], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'test',
      PORT: '0',
      HOST: '127.0.0.1',
      BCRYPT_COST: '4',
      SEED_ON_START: 'false',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'line',
      MAINTENANCE_FIRST_PASS_SECONDS: 'off', // as in testConfig (harness.ts)
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: string[] = [];
  const output = () => chunks.join('');
  child.stdout!.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output, ended };
}

export function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const { child, output, ended } = spawnServerProcess(env);
  const exited = ended.then(({ code }) => code);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      // A process that never listened is not left running behind the failed test.
      child.kill('SIGKILL');
      reject(new Error(`server did not start:\n${output()}`));
    }, 30_000);
    child.stdout!.on('data', () => {
      const match = /Listening on [\d.]+:(\d+)/.exec(output());
      if (match) {
        clearTimeout(timer);
        const port = Number(match[1]);
        resolve({ child, url: `http://127.0.0.1:${port}`, port, output, exited });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output()}`));
    });
  });
}
