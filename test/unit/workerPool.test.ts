// The bounded worker pool: concurrency, the queue bound, all-or-nothing batches, aborts, shutdown.
import { describe, expect, it } from 'vitest';
import { PoolClosedError, QueueFullError, TaskAbortedError, WorkerPool } from '../../src/core/service/workerPool.js';

/** A task that finishes when told to, and notices its abort signal. */
function gate<T>(value: T) {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let started = false;
  let signal: AbortSignal | undefined;
  const task = async (s: AbortSignal): Promise<T> => {
    started = true;
    signal = s;
    await Promise.race([opened, new Promise((r) => s.addEventListener('abort', r, { once: true }))]);
    return value;
  };
  return {
    task,
    open,
    get started() {
      return started;
    },
    get signal() {
      return signal;
    },
  };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('WorkerPool', () => {
  it('runs at most `concurrency` tasks, in submission order, and refuses beyond the queue limit', async () => {
    const pool = new WorkerPool({ concurrency: 2, queueLimit: 2 });
    const gs = [gate(1), gate(2), gate(3), gate(4)];
    const ps = gs.map((g) => pool.submit(g.task));
    await tick();
    expect(gs.map((g) => g.started)).toEqual([true, true, false, false]);
    expect(pool.inFlight).toBe(2);
    expect(pool.queued).toBe(2);
    expect(pool.canAccept(1)).toBe(false);
    let err: unknown;
    try {
      pool.submit(gate(5).task);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(QueueFullError);
    expect((err as QueueFullError).retryAfterS).toBeGreaterThanOrEqual(1);
    gs[0].open();
    expect(await ps[0]).toBe(1);
    await tick();
    expect(gs[2].started).toBe(true);
    expect(gs[3].started).toBe(false);
    for (const g of gs) g.open();
    expect(await Promise.all(ps)).toEqual([1, 2, 3, 4]);
    expect(pool.inFlight + pool.queued).toBe(0);
    expect(pool.completed).toBe(4);
    expect(pool.meanTaskSeconds()).not.toBeNull();
  });

  it('batches are all or nothing; idle workers count toward what fits', () => {
    const pool = new WorkerPool({ concurrency: 2, queueLimit: 1 });
    expect(pool.capacity).toBe(3);
    expect(pool.canAccept(3)).toBe(true);
    expect(pool.canAccept(4)).toBe(false);
    expect(() => pool.submitAll([gate(1).task, gate(2).task, gate(3).task, gate(4).task])).toThrow(QueueFullError);
    expect(pool.queued + pool.inFlight).toBe(0);
    const gs = [gate(1), gate(2), gate(3)];
    const ps = pool.submitAll(gs.map((g) => g.task));
    expect(pool.canAccept(1)).toBe(false);
    for (const g of gs) g.open();
    return Promise.all(ps);
  });

  it('a caller signal aborts a queued task (slot freed) and a running one (signal reaches the task)', async () => {
    const pool = new WorkerPool({ concurrency: 1, queueLimit: 1 });
    const running = gate('r');
    const queued = gate('q');
    const ac1 = new AbortController();
    const ac2 = new AbortController();
    const p1 = pool.submit(running.task, ac1.signal);
    const p2 = pool.submit(queued.task, ac2.signal);
    await tick();
    ac2.abort('client left');
    await expect(p2).rejects.toMatchObject({ name: 'TaskAbortedError', reason: 'client left', started: false });
    expect(pool.queued).toBe(0);
    expect(queued.started).toBe(false);
    ac1.abort();
    const e = await p1.catch((x: unknown) => x);
    expect(e).toBeInstanceOf(TaskAbortedError);
    expect((e as TaskAbortedError).started).toBe(true);
    expect(running.signal!.aborted).toBe(true);
    expect(pool.inFlight).toBe(0);
  });

  it('a task that throws rejects its own promise only', async () => {
    const pool = new WorkerPool({ concurrency: 1, queueLimit: 4 });
    const bad = pool.submit(async () => {
      throw new Error('boom');
    });
    const good = pool.submit(async () => 7);
    await expect(bad).rejects.toThrow('boom');
    expect(await good).toBe(7);
  });

  it('shutdown lets work finish within the grace, then aborts the rest; refuses new work', async () => {
    const pool = new WorkerPool({ concurrency: 1, queueLimit: 2 });
    const a = gate('a');
    const pa = pool.submit(a.task);
    const done = pool.shutdown(10_000);
    expect(() => pool.submit(gate(1).task)).toThrow(PoolClosedError);
    a.open();
    expect(await pa).toBe('a');
    expect(await done).toEqual({ aborted: 0 });

    const pool2 = new WorkerPool({ concurrency: 1, queueLimit: 2 });
    const r = gate('r');
    const q = gate('q');
    const pr = pool2.submit(r.task).catch((e: unknown) => e);
    const pq = pool2.submit(q.task).catch((e: unknown) => e);
    await tick();
    expect(await pool2.shutdown(20, 'shutting down')).toEqual({ aborted: 2 });
    expect(await pr).toMatchObject({ reason: 'shutting down', started: true });
    expect(await pq).toMatchObject({ reason: 'shutting down', started: false });
    expect(pool2.accepting).toBe(false);
  });

  it('rejects nonsense sizes', () => {
    expect(() => new WorkerPool({ concurrency: 0, queueLimit: 1 })).toThrow(/concurrency/);
    expect(() => new WorkerPool({ concurrency: 1, queueLimit: -1 })).toThrow(/queueLimit/);
  });
});
