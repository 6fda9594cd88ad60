// What the service needs from the machine to accept work: a long RL run fills disks and memory
// slowly, and an orchestrator must see that before simulations fail with ENOSPC or the OOM killer
// takes a run (readiness, /readyz). The processes it runs are listed by util/proc.ts descendants.
import { DEFAULT_SERVICE } from '../vocabulary/defaults.js';
import { statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';

export interface ResourceLimits {
  /** Free bytes the run-directory file system must keep (default 256 MiB). */
  minFreeDiskBytes: number;
  /** Resident memory of the service process, bytes, above which it stops taking work (default 4 GiB). */
  maxRssBytes: number;
}

export const DEFAULT_RESOURCE_LIMITS: ResourceLimits = {
  minFreeDiskBytes: DEFAULT_SERVICE.minFreeDiskMiB * 1024 * 1024,
  maxRssBytes: DEFAULT_SERVICE.maxRssMiB * 1024 * 1024,
};

export interface ResourceCheck {
  ok: boolean;
  /** The failing check's cause: disk_low or memory_high. */
  cause?: 'disk_low' | 'memory_high';
  message?: string;
  disk: Array<{ path: string; free_bytes: number | null }>;
  rss_bytes: number;
}

/** Free bytes on the file system holding `path` for an unprivileged writer; null when unknown. */
export function freeBytes(path: string): number | null {
  try {
    const s = statfsSync(path);
    return Number(s.bavail) * Number(s.bsize);
  } catch {
    return null;
  }
}

/** Disk and memory against the limits. `dirs`: where the service writes (the run directories
 * go to the OS temp directory, always checked). */
export function checkResources(limits: ResourceLimits, dirs: string[]): ResourceCheck {
  const paths = [...new Set([tmpdir(), ...dirs])];
  const disk = paths.map((path) => ({ path, free_bytes: freeBytes(path) }));
  const rss = process.memoryUsage.rss();
  const low = disk.find((d) => d.free_bytes !== null && d.free_bytes < limits.minFreeDiskBytes);
  if (low)
    return {
      ok: false,
      cause: 'disk_low',
      message: `${low.path} has ${mib(low.free_bytes!)} free, under the ${mib(limits.minFreeDiskBytes)} the service keeps for run directories`,
      disk,
      rss_bytes: rss,
    };
  if (rss > limits.maxRssBytes)
    return {
      ok: false,
      cause: 'memory_high',
      message: `the service's resident memory ${mib(rss)} is over its limit of ${mib(limits.maxRssBytes)}`,
      disk,
      rss_bytes: rss,
    };
  return { ok: true, disk, rss_bytes: rss };
}

const mib = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MiB`;
