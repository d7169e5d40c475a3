// What every benchmark result file records about its run, so a number can be traced to the code and the machine
// that produced it: the commit and whether the tree had uncommitted changes (tracked files only), the machine,
// node, and the load average when the run started and when it ended (the machine is shared).
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { ROOT } from './processes';

export interface RunInfo {
  /** `git rev-parse HEAD` of the checkout the benchmark ran from; null outside a git checkout. */
  commit: string | null;
  /** Tracked files differed from the commit (`git status --porcelain --untracked-files=no`); null: unknown. */
  dirty: boolean | null;
  cpus: number;
  cpuModel: string | null;
  memoryGb: number;
  platform: string;
  node: string;
  nodeFlags: string[];
  /** The 1, 5 and 15-minute load averages. */
  loadAverageAtStart: number[];
  loadAverageAtEnd: number[] | null;
  startedAt: string;
  endedAt: string | null;
}

function git(args: string[]): string | null {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return null;
  }
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/**
 * Call when the run starts; `finish()` adds the end (load average, time) and returns what the result file stores
 * under `run`.
 */
export function startRunInfo(): { info: RunInfo; finish(): RunInfo } {
  const status = git(['status', '--porcelain', '--untracked-files=no']);
  const info: RunInfo = {
    commit: git(['rev-parse', 'HEAD'])?.trim() || null,
    dirty: status === null ? null : status.trim() !== '',
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? null,
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    nodeFlags: process.execArgv,
    loadAverageAtStart: os.loadavg().map(round2),
    loadAverageAtEnd: null,
    startedAt: new Date().toISOString(),
    endedAt: null,
  };
  return {
    info,
    finish: () => ({
      ...info,
      loadAverageAtEnd: os.loadavg().map(round2),
      endedAt: new Date().toISOString(),
    }),
  };
}
