// Shared by the order benchmarks: what the service's own /metrics say about its group commit, and how much CPU
// a process has used (Linux /proc), which depends far less on the machine's load than a rate does.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/** Sum and count of the group-commit batch-size histogram over every instance (requests, transactions). */
export async function groupCommitBatches(urls: string[]): Promise<{ sum: number; count: number }> {
  const total = { sum: 0, count: 0 };
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    total.sum += Number(/^marketplace_group_commit_batch_size_sum (\S+)$/m.exec(text)?.[1] ?? 0);
    total.count += Number(/^marketplace_group_commit_batch_size_count (\S+)$/m.exec(text)?.[1] ?? 0);
  }
  return total;
}

/**
 * CPU time (user + system) of this process's children that exited and were waited for (cutime + cstime), in
 * microseconds: a generator run as a child process (wrk), measured across its run.
 */
export function reapedChildrenCpuMicros(): number {
  const fields = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  // cutime and cstime are fields 16 and 17 of the line, in clock ticks (USER_HZ, 100 on Linux)
  return (Number(fields[13]) + Number(fields[14])) * 10_000;
}

/** A process's CPU time so far (user + system), in microseconds, from Linux /proc; 0 once it is gone. */
export function cpuMicros(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime and stime are fields 14 and 15 of the line, in clock ticks (USER_HZ, 100 on Linux)
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return 0;
  }
}

/**
 * The machine's CPU time so far over all cores, in /proc/stat ticks: all of it, the idle part (idle + iowait) and
 * what the hypervisor took (steal).
 */
export function machineTicks(): { total: number; idle: number; steal: number } {
  const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { total: cpu.reduce((a, b) => a + b, 0), idle: (cpu[3] ?? 0) + (cpu[4] ?? 0), steal: cpu[7] ?? 0 };
}

/** The pid of the oldest process with exactly this name (mariadbd, nats-server), or null. */
export function pidOf(name: string): number | null {
  try {
    return Number(execFileSync('pgrep', ['-o', '-x', name], { encoding: 'utf8' }).trim()) || null;
  } catch {
    return null;
  }
}

/** A process's peak resident memory so far (VmHWM), in MB, from Linux /proc; 0 once it is gone. */
export function peakRssMb(pid: number): number {
  try {
    const kb = /^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round(Number(kb) / 1024) : 0;
  } catch {
    return 0;
  }
}
