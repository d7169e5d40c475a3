// The tests' private nats-server dies with the process that started it, also when that process is killed (-9)
// and cannot clean up; a server stopped by the test leaves nothing behind either.
import { spawn } from 'node:child_process';
import { natsTest, until } from './cluster-fixtures';
import { accepts, startPrivateNats } from './private-nats';

/** The watchdog shells still running for `serverPid` (ps's full command lines). */
function watchdogsFor(serverPid: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const ps = spawn('ps', ['-eo', 'args'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    ps.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    ps.once('error', reject);
    ps.once('close', () =>
      resolve(
        out.split('\n').filter((line) => line.includes('nats-watchdog') && line.endsWith(` ${serverPid}`))
          .length,
      ),
    );
  });
}

natsTest('a private nats-server goes when the process that started it is killed (-9)', async (t) => {
  // A test process of its own that starts a private server, prints its port and waits to be killed.
  const source = `
    import { startPrivateNats } from './test/cluster/private-nats.ts';
    const nats = await startPrivateNats();
    console.log(nats.port);
    setInterval(() => undefined, 1000);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => void child.kill('SIGKILL'));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((text) => /^\d+$/.test(text.trim()));
      if (line) resolve(Number(line));
    });
    child.once('exit', (code) =>
      reject(new Error(`the test process exited (${code}) before its server started`)),
    );
  });
  t.true(await accepts(port), 'the private server runs');
  child.kill('SIGKILL');
  await until(
    async () => !(await accepts(port)),
    5_000,
    () => `nats-server on port ${port} outlived its process`,
  );
  t.false(await accepts(port));
});

natsTest('a private nats-server stopped by its test leaves no watchdog behind', async (t) => {
  const nats = await startPrivateNats();
  const pid = nats.pid();
  t.truthy(pid);
  t.is(await watchdogsFor(pid!), 1, 'one watchdog while it runs');
  await nats.close();
  await until(
    async () => (await watchdogsFor(pid!)) === 0,
    3_000,
    () => 'the watchdog is still running',
  );
  t.pass();
});
