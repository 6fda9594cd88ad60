// At most `n` tasks at once (simulations across agent samples, model calls). FIFO; an aborted
// waiter leaves the queue.
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly n: number) {
    if (!(n >= 1)) throw new RangeError(`Semaphore size must be >= 1, got ${n}`);
  }

  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.acquire(signal);
    try {
      return await task();
    } finally {
      this.release();
    }
  }

  private acquire(signal?: AbortSignal): Promise<void> {
    if (this.active < this.n) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((res, rej) => {
      const go = (): void => {
        signal?.removeEventListener('abort', onAbort);
        this.active++;
        res();
      };
      const onAbort = (): void => {
        const i = this.waiters.indexOf(go);
        if (i >= 0) this.waiters.splice(i, 1);
        rej(signal!.reason ?? new Error('aborted'));
      };
      this.waiters.push(go);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private release(): void {
    this.active--;
    this.waiters.shift()?.();
  }
}
