// runBounded stops the whole process tree, not only the leader's process group: a child in a
// session of its own (as bubblewrap's --new-session puts the simulation) must die on cancel,
// timeout and output overflow, and its open pipes must not hold the caller until it ends itself.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { descendants, runBounded } from '../../src/core/util/proc.js';

/** Whether `pid` still runs: gone, or a zombie its new parent has not reaped yet, is not. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

// sh starts `sleep` in a new session (setsid, not a group leader, so it execs without forking) and
// prints its pid; the sleep inherits sh's stdout, so the caller's pipe stays open while it lives.
const escaper = ['-c', 'setsid sleep 300 & echo "pid=$!"; wait'];

async function waitForPid(out: () => string): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const m = /pid=(\d+)/.exec(out());
    if (m) return Number(m[1]);
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the child never printed its pid');
}

describe('runBounded stops the whole tree', () => {
  it('cancel: a grandchild in its own session is killed and the call returns at once', async () => {
    const ac = new AbortController();
    let pid = 0;
    const run = runBounded('sh', escaper, { signal: ac.signal, timeoutS: 120, graceS: 1 });
    // The pid is in /proc as soon as sleep runs; find it by the tree rather than by output.
    for (let i = 0; i < 200 && !pid; i++) {
      pid = descendants().find((p) => p.name === 'sleep' && p.ppid !== process.pid)?.pid ?? 0;
      if (!pid) await new Promise((r) => setTimeout(r, 25));
    }
    expect(pid).toBeGreaterThan(0);
    const t0 = Date.now();
    ac.abort();
    const r = await run;
    expect(r.cancelled).toBe(true);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(running(pid)).toBe(false);
  });

  it('timeout: the same grandchild is killed at the limit, its output kept', async () => {
    const r = await runBounded('sh', escaper, { timeoutS: 1, graceS: 1 });
    expect(r.timedOut).toBe(true);
    const pid = await waitForPid(() => r.stdout);
    expect(r.durationS).toBeLessThan(10);
    expect(running(pid)).toBe(false);
  });

  it('a grandchild that ignores SIGTERM is killed after the grace', async () => {
    const r = await runBounded('sh', ['-c', `setsid sh -c 'trap "" TERM; echo "pid=$$"; while :; do sleep 1; done' & wait`], {
      timeoutS: 1,
      graceS: 1,
    });
    expect(r.timedOut).toBe(true);
    const pid = await waitForPid(() => r.stdout);
    expect(r.durationS).toBeLessThan(10);
    expect(running(pid)).toBe(false);
  });
});
