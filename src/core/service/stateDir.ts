// The service's state directory (`chorus serve --state-dir`): recorded answers (idempotency.ts)
// and the run directories of this instance, under STATE/tmp-<pid>. A service killed with SIGKILL
// cannot remove its scratch folders; the next instance on the same state directory finds the
// folders of instances that are no longer alive and removes them, so nothing piles up over a
// 50-hour run of kills and restarts.
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../util/proc.js';

export interface ClaimedStateDir {
  /** This instance's scratch root (STATE/tmp-<pid>): point TMPDIR at it. */
  scratch: string;
  /** Folders of dead instances removed on the way in. */
  removed: string[];
  /** Removes this instance's scratch root (on a clean stop). */
  release(): void;
}

/** Removes the folders of `stateDir` whose name `pattern` matches with a process id in its first
 * group, where that process is gone (what a killed instance left behind); returns their names. */
export function sweepDead(stateDir: string, pattern: RegExp): string[] {
  mkdirSync(stateDir, { recursive: true });
  const removed: string[] = [];
  for (const d of readdirSync(stateDir)) {
    const m = pattern.exec(d);
    if (m && Number(m[1]) !== process.pid && !processAlive(Number(m[1]))) {
      rmSync(join(stateDir, d), { recursive: true, force: true });
      removed.push(d);
    }
  }
  return removed;
}

export function claimStateDir(stateDir: string): ClaimedStateDir {
  const removed = sweepDead(stateDir, /^tmp-(\d+)$/);
  const scratch = join(stateDir, `tmp-${process.pid}`);
  mkdirSync(scratch, { recursive: true });
  return { scratch, removed, release: () => rmSync(scratch, { recursive: true, force: true }) };
}
