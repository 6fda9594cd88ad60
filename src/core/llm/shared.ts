// Loaded in-process models are shared: backends for the same model folder and settings take the
// same load (a cache keyed by them) and count their users; the last one to dispose frees it, after
// the work queued on it has finished. Both in-process engines (local.ts, llama.ts) use this.
import { abortable } from './backend.js';

export interface SharedModel {
  users: number;
  /** Requests run one at a time on a loaded model: each chains on this. */
  queue: Promise<unknown>;
}

/** Loads under way: how many callers still wait on each, and the switch that stops it. */
const loading = new WeakMap<Promise<unknown>, { waiting: number; stop: AbortController }>();

/**
 * This caller's hold on the model `key`: the one already loaded or loading, else a new load by
 * `start`. `signal` gives up this caller's wait (the promise rejects with `cancelled()` at once);
 * the load itself stops, through the signal `start` got, when every caller waiting on it has given
 * up, and `start` then releases what it had loaded. A caller without a signal keeps the load going.
 */
export function acquireShared<L extends SharedModel>(
  cache: Map<string, Promise<L>>,
  key: string,
  start: (signal: AbortSignal) => Promise<L>,
  signal: AbortSignal | undefined,
  cancelled: () => Error,
): Promise<L> {
  if (signal?.aborted) return Promise.reject(cancelled());
  let p = cache.get(key);
  if (!p) {
    const stop = new AbortController();
    const started = start(stop.signal);
    p = started;
    cache.set(key, started);
    loading.set(started, { waiting: 0, stop });
    started.then(
      () => loading.delete(started),
      () => {
        loading.delete(started);
        if (cache.get(key) === started) cache.delete(key);
      },
    );
  }
  const load = p;
  const w = loading.get(load);
  let held: Promise<L> = load;
  if (w && signal) {
    w.waiting++;
    const onAbort = (): void => {
      if (--w.waiting > 0) return;
      // nobody waits any more: stop the load, and let a later caller start afresh
      if (cache.get(key) === load) cache.delete(key);
      w.stop.abort();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    held = abortable(load, signal, cancelled).finally(() => signal.removeEventListener('abort', onAbort));
  } else if (w) w.waiting = Number.POSITIVE_INFINITY; // waits without a way to give up
  return held.then((l) => {
    l.users++;
    return l;
  });
}

/** Gives up one user's hold on `mine`; the last user removes it from `cache` and frees it. */
export async function releaseShared<L extends SharedModel>(
  mine: Promise<L> | null,
  cache: Map<string, Promise<L>>,
  free: (l: L) => Promise<void>,
): Promise<void> {
  if (!mine) return;
  let l: L;
  try {
    l = await mine;
  } catch {
    return; // a load that failed holds nothing
  }
  if (--l.users > 0) return;
  for (const [k, v] of cache) if (v === mine || (await v.catch(() => null)) === l) cache.delete(k);
  await l.queue;
  await free(l);
}
