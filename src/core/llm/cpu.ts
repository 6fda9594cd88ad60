// The in-process engines' default thread count: the physical cores. A hyperthread shares its core's
// vector units, so a matrix-vector decode gets nothing from a second thread on it and loses to the
// contention; llama.cpp and onnxruntime both run best with one thread per physical core.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/**
 * Physical cores in a /proc/cpuinfo text: the distinct ("physical id", "core id") pairs of its
 * processor blocks. null when the blocks do not say (ARM and some virtual machines leave them out).
 */
export function coresInCpuinfo(text: string): number | null {
  const pairs = new Set<string>();
  for (const block of text.split(/\n\s*\n/)) {
    const field = (name: string): string | undefined => new RegExp(`^${name}\\s*:\\s*(\\S+)`, 'm').exec(block)?.[1];
    const core = field('core id');
    if (core === undefined) continue;
    pairs.add(`${field('physical id') ?? '0'}/${core}`);
  }
  return pairs.size || null;
}

/** The default thread count from a cpuinfo text (null: none to read) and the CPUs usable here. */
export function threadsFrom(cpuinfo: string | null, usable: number): number {
  const cores = cpuinfo === null ? null : coresInCpuinfo(cpuinfo);
  return Math.max(1, Math.min(cores ?? usable, usable));
}

let memo: number | null = null;

/**
 * Threads for an in-process engine when none are given: the physical cores (Linux: /proc/cpuinfo),
 * at most the CPUs this process may run on (os.availableParallelism(), which follows the affinity
 * mask a container or `taskset` sets while /proc/cpuinfo lists the host's); elsewhere, or where
 * cpuinfo does not say, availableParallelism() itself.
 */
export function physicalCores(): number {
  if (memo !== null) return memo;
  let cpuinfo: string | null = null;
  if (process.platform === 'linux') {
    try {
      cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
    } catch {
      cpuinfo = null; // no /proc (a sandbox): availableParallelism() below
    }
  }
  memo = threadsFrom(cpuinfo, availableParallelism());
  return memo;
}
