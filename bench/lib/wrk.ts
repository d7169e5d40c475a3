// wrk (Debian's `wrk` package) as the generator of a plain GET load. It is a C program: a request costs it a
// few microseconds of CPU where autocannon costs ~25 (bench/README.md, Cluster), so on the 2 shared cores it
// leaves the CPU to the services it measures. One wrk process; its threads are spread round-robin over the
// instances' addresses by wrk's Lua `setup` hook (as a balancer spreads connections), and its `done` hook
// prints the counts and latency percentiles as one JSON line.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface WrkResult {
  requests: number;
  durationSeconds: number;
  /** Answers with a status outside 2xx/3xx. */
  non2xx: number;
  /** Socket errors and timeouts. */
  errors: number;
  p50Ms: number;
  p99Ms: number;
}

/** Whether `wrk` is on the PATH. */
export function wrkAvailable(): boolean {
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
}

function script(targets: string[]): string {
  return `
local targets = { ${targets.map((t) => JSON.stringify(t)).join(', ')} }
local n = 0
function setup(thread)
  local host, port = targets[(n % #targets) + 1]:match("([^:]+):(%d+)")
  n = n + 1
  thread.addr = wrk.lookup(host, port)[1]
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_RESULT {"requests":%d,"durationUs":%d,"non2xx":%d,"errors":%d,"p50Us":%d,"p99Us":%d}\\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`;
}

/**
 * GETs `urlPath` on every base URL (`http://127.0.0.1:<port>`) for `seconds`: `threads` wrk threads (a multiple
 * of the number of URLs spreads them evenly), `connections` keep-alive connections in all.
 */
export async function runWrk(options: {
  urls: string[];
  urlPath: string;
  connections: number;
  threads: number;
  seconds: number;
}): Promise<WrkResult> {
  const targets = options.urls.map((url) => new URL(url).host);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-wrk-')), 'spread.lua');
  fs.writeFileSync(file, script(targets));
  try {
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(
        'wrk',
        [
          `--threads=${options.threads}`,
          `--connections=${options.connections}`,
          `--duration=${options.seconds}s`,
          '--timeout=60s',
          `--script=${file}`,
          `${options.urls[0]}${options.urlPath}`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      let text = '';
      child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.once('error', reject);
      child.once('exit', (code) =>
        code === 0 ? resolve(text) : reject(new Error(`wrk exited ${code}: ${text}`)),
      );
    });
    const line = /WRK_RESULT (\{.*\})/.exec(output);
    if (!line) throw new Error(`wrk printed no result:\n${output}`);
    const r = JSON.parse(line[1]) as {
      requests: number;
      durationUs: number;
      non2xx: number;
      errors: number;
      p50Us: number;
      p99Us: number;
    };
    return {
      requests: r.requests,
      durationSeconds: r.durationUs / 1e6,
      non2xx: r.non2xx,
      errors: r.errors,
      p50Ms: r.p50Us / 1000,
      p99Ms: r.p99Us / 1000,
    };
  } finally {
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
}
