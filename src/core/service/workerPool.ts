// A bounded worker pool: at most `concurrency` tasks run at once, at most `queueLimit` wait, and
// work that does not fit is refused up front (the caller answers 429) instead of piling up.
// Every task gets an AbortSignal: a caller's signal (client gone) or the pool's shutdown aborts it,
// queued or running, and its promise rejects with TaskAbortedError saying why. Nothing is dropped
// silently: every accepted task's promise settles.

export type Task<T> = (signal: AbortSignal) => Promise<T>;

export interface PoolOptions {
  /** Tasks running at once (>= 1). */
  concurrency: number;
  /** Tasks waiting for a worker (>= 0). */
  queueLimit: number;
}

export class QueueFullError extends Error {
  constructor(
    /** Suggested wait before retrying, whole seconds (>= 1). */
    readonly retryAfterS: number,
    readonly queued: number,
    readonly queueLimit: number,
  ) {
    super(`the queue is full (${queued} of ${queueLimit} waiting); retry after ${retryAfterS}s`);
    this.name = 'QueueFullError';
  }
}

export class PoolClosedError extends Error {
  constructor(message = 'the worker pool is shutting down and accepts no new work') {
    super(message);
    this.name = 'PoolClosedError';
  }
}

export class TaskAbortedError extends Error {
  constructor(
    readonly reason: string,
    /** Whether the task had started running when it was aborted. */
    readonly started: boolean,
  ) {
    super(reason);
    this.name = 'TaskAbortedError';
  }
}

interface Entry {
  task: Task<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  controller: AbortController;
  started: boolean;
  detach: () => void;
}

function reasonText(reason: unknown, fallback: string): string {
  if (typeof reason === 'string') return reason;
  if (reason instanceof TaskAbortedError) return reason.reason;
  if (reason instanceof Error && reason.name !== 'AbortError') return reason.message;
  return fallback;
}

export class WorkerPool {
  readonly concurrency: number;
  readonly queueLimit: number;
  private readonly queue: Entry[] = [];
  private readonly running = new Set<Entry>();
  private closed = false;
  private readonly recent: number[] = [];
  private idleWaiters: Array<() => void> = [];
  /** Tasks finished (resolved or rejected by the task itself) since the pool started. */
  completed = 0;

  constructor(opts: PoolOptions) {
    if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1)
      throw new Error(`concurrency must be an integer >= 1, got ${opts.concurrency}`);
    if (!Number.isInteger(opts.queueLimit) || opts.queueLimit < 0)
      throw new Error(`queueLimit must be an integer >= 0, got ${opts.queueLimit}`);
    this.concurrency = opts.concurrency;
    this.queueLimit = opts.queueLimit;
  }

  get queued(): number {
    return this.queue.length;
  }
  get inFlight(): number {
    return this.running.size;
  }
  get accepting(): boolean {
    return !this.closed;
  }

  /** Whether `n` more tasks fit: idle workers take theirs at once, the queue must hold the rest. */
  canAccept(n: number): boolean {
    const idle = Math.max(0, this.concurrency - this.running.size - this.queue.length);
    return !this.closed && this.queue.length + Math.max(0, n - idle) <= this.queueLimit;
  }

  /** The most tasks one submission can ever hold (a batch beyond this can never be accepted). */
  get capacity(): number {
    return this.concurrency + this.queueLimit;
  }

  /** Mean duration of the last tasks, seconds (null before any finished). */
  meanTaskSeconds(): number | null {
    return this.recent.length ? this.recent.reduce((a, b) => a + b, 0) / this.recent.length : null;
  }

  /** How long until `n` queue slots likely free up: tasks finish about one mean duration apart
   * per worker, so n slots take about mean * n / workers. Whole seconds, at least 1. */
  retryAfterS(n = 1): number {
    const mean = this.meanTaskSeconds() ?? 1;
    return Math.max(1, Math.ceil(mean * Math.ceil(n / this.concurrency)));
  }

  submit<T>(task: Task<T>, signal?: AbortSignal): Promise<T> {
    return this.submitAll([task], signal)[0];
  }

  /** All or nothing: throws QueueFullError / PoolClosedError synchronously when they do not all fit. */
  submitAll<T>(tasks: Array<Task<T>>, signal?: AbortSignal): Array<Promise<T>> {
    if (this.closed) throw new PoolClosedError();
    if (!this.canAccept(tasks.length)) throw new QueueFullError(this.retryAfterS(tasks.length), this.queue.length, this.queueLimit);
    const promises = tasks.map((task) => {
      let entry!: Entry;
      const p = new Promise<T>((resolve, reject) => {
        entry = {
          task: task as Task<unknown>,
          resolve: resolve as (v: unknown) => void,
          reject,
          controller: new AbortController(),
          started: false,
          detach: () => {},
        };
      });
      if (signal) {
        const onAbort = (): void => this.abortEntry(entry, reasonText(signal.reason, 'the client went away'));
        if (signal.aborted) queueMicrotask(onAbort);
        else {
          signal.addEventListener('abort', onAbort, { once: true });
          entry.detach = () => signal.removeEventListener('abort', onAbort);
        }
      }
      this.queue.push(entry);
      return p;
    });
    this.pump();
    return promises;
  }

  private abortEntry(entry: Entry, reason: string): void {
    const i = this.queue.indexOf(entry);
    if (i >= 0) {
      this.queue.splice(i, 1);
      entry.detach();
      entry.reject(new TaskAbortedError(reason, false));
      this.notifyIdle();
      return;
    }
    if (this.running.has(entry) && !entry.controller.signal.aborted) entry.controller.abort(new TaskAbortedError(reason, true));
  }

  private pump(): void {
    while (this.running.size < this.concurrency && this.queue.length) {
      const entry = this.queue.shift()!;
      entry.started = true;
      this.running.add(entry);
      const t0 = performance.now();
      let p: Promise<unknown>;
      try {
        p = entry.task(entry.controller.signal);
      } catch (e) {
        p = Promise.reject(e);
      }
      p.then(
        (v) => this.settle(entry, t0, () => entry.resolve(v)),
        (e) => this.settle(entry, t0, () => entry.reject(e)),
      );
    }
    this.notifyIdle();
  }

  private settle(entry: Entry, t0: number, done: () => void): void {
    this.running.delete(entry);
    entry.detach();
    const aborted = entry.controller.signal.aborted;
    if (aborted) {
      const r = entry.controller.signal.reason;
      entry.reject(r instanceof TaskAbortedError ? r : new TaskAbortedError(reasonText(r, 'aborted'), true));
    } else {
      this.completed++;
      this.recent.push((performance.now() - t0) / 1000);
      if (this.recent.length > 32) this.recent.shift();
      done();
    }
    this.pump();
  }

  private notifyIdle(): void {
    if (this.queue.length === 0 && this.running.size === 0) {
      const w = this.idleWaiters;
      this.idleWaiters = [];
      for (const f of w) f();
    }
  }

  /** Resolves when nothing is queued or running. */
  whenIdle(): Promise<void> {
    if (this.queue.length === 0 && this.running.size === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** Aborts every queued and running task now (their promises reject with TaskAbortedError). */
  abortAll(reason: string): number {
    const victims = [...this.queue, ...this.running];
    for (const e of victims) this.abortEntry(e, reason);
    return victims.length;
  }

  /**
   * Stops accepting; lets queued and running tasks finish for up to `graceMs`, then aborts the
   * rest with `reason` (their promises reject with TaskAbortedError) and waits for them to settle.
   */
  async shutdown(graceMs: number, reason = 'the server is shutting down'): Promise<{ aborted: number }> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'timeout'>((r) => {
      timer = setTimeout(() => r('timeout'), Math.max(0, graceMs));
    });
    const outcome = await Promise.race([this.whenIdle().then(() => 'idle' as const), graceOver]);
    clearTimeout(timer);
    if (outcome === 'idle') return { aborted: 0 };
    const aborted = this.abortAll(reason);
    await this.whenIdle();
    return { aborted };
  }
}
