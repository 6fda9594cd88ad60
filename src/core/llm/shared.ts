// Loaded in-process models are shared: backends for the same model folder and settings take the
// same load (a cache keyed by them) and count their users; the last one to dispose frees it, after
// the work queued on it has finished. Both in-process engines (local.ts, llama.ts) use this.

export interface SharedModel {
  users: number;
  /** Requests run one at a time on a loaded model: each chains on this. */
  queue: Promise<unknown>;
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
