// The editor worker's local model, held between requests: loading a 4B model takes long, and the
// engine keeps the KV state of the last prompt for the next request. One is held at a time: a
// request for another configuration (another folder, engine, KV cache type ...: the whole
// ModelConfig is the key) frees the held one first, so two never sit in memory together. No vscode
// import: handlers.ts uses it, and test/integration/heldModel.test.ts drives it with a real engine.
import type { ModelBackend } from '../../../core/run/types.js';
import { ModelError, createBackend, resolveModelRef } from '../../../core/run/models.js';
import type { ModelConfig } from '../protocol.js';

interface Held {
  key: string;
  backend: ModelBackend;
  /** The load finished: from then on the request that started it no longer matters to it. */
  loaded: boolean;
}

let held: Held | null = null;
let onHeldProgress: ((s: string) => void) | undefined;
/** Dropped backends still freeing their memory: a new load waits for them. */
let freeing: Promise<unknown> = Promise.resolve();

/** The held model's key and whether its load finished (null: none held). */
export function heldModel(): { key: string; loaded: boolean } | null {
  return held && { key: held.key, loaded: held.loaded };
}

/** Why a held backend's load failed (it is disposed right after). */
const loadErrors = new WeakMap<ModelBackend, unknown>();

function drop(h: Held): void {
  if (held === h) held = null;
  freeing = Promise.all([freeing, h.backend.dispose().catch(() => undefined)]);
}

/** Frees the held model (a switch of model, the worker's end), and waits for the memory to be freed. */
export async function releaseModel(): Promise<void> {
  if (held) drop(held);
  await freeing;
}

/**
 * A backend for the model through the one factory (core/llm/factory.ts); a local model is held.
 * `signal` (the request's) cancels the load it starts: a load cancelled before it finished leaves
 * a backend that can only answer 'cancelled', so it is dropped at once and the next request starts
 * a fresh load. A request that finds the same model loading waits on that load (and its request's
 * cancel).
 */
export async function makeBackend(
  m: ModelConfig | null,
  onProgress?: (s: string) => void,
  signal?: AbortSignal,
): Promise<ModelBackend | null> {
  if (!m) return null;
  if (m.kind === 'openai') return createBackend(m);
  onHeldProgress = onProgress;
  const key = JSON.stringify(m);
  if (held?.key === key) return shared(held.backend);
  await releaseModel();
  const progress = (s: string): void => onHeldProgress?.(s);
  const backend = await createBackend({
    ...m,
    // chorus.model.localPath may name a model of the cache (owner/name[:selector]), as --model does
    modelDir: resolveModelRef(m.modelDir, { allowDownload: m.allowDownload ?? false }),
    signal,
    onMessage: progress,
    onProgress: (p) =>
      progress(`loading model: ${p.file} ${p.status}${p.total ? ` ${Math.round((100 * (p.loaded ?? 0)) / p.total)}%` : ''}`),
  });
  if (signal?.aborted) {
    await backend.dispose().catch(() => undefined);
    throw new ModelError('cancelled', 'Loading the model was cancelled.');
  }
  const h: Held = { key, backend, loaded: false };
  held = h;
  const onAbort = (): void => {
    if (!h.loaded) drop(h);
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  // Start the load now (each request asks info() first anyway): a failed or cancelled one is
  // dropped, not kept for the next request to fail on.
  backend.info().then(
    () => {
      h.loaded = true;
      signal?.removeEventListener('abort', onAbort);
    },
    (e: unknown) => {
      signal?.removeEventListener('abort', onAbort);
      loadErrors.set(backend, e);
      drop(h);
    },
  );
  return shared(backend);
}

/** The held backend for one request: its dispose() leaves the model loaded (releaseModel frees it);
 * a load that failed is dropped so the next request tries again. */
function shared(b: ModelBackend): ModelBackend {
  return {
    parallelism: b.parallelism,
    // A load that failed was dropped (disposed) at once: its caller still gets the load's own
    // error, not "disposed", whichever comes first.
    info: () =>
      (loadErrors.has(b) ? Promise.reject(loadErrors.get(b)) : b.info()).catch(async (e: unknown) => {
        if (held?.backend === b) await releaseModel();
        throw e;
      }),
    countTokens: (m) => b.countTokens(m),
    promptIds: b.promptIds ? (m) => b.promptIds!(m) : undefined,
    complete: (r) => b.complete(r),
    dispose: async () => {
      if (held?.backend !== b) await b.dispose().catch(() => undefined);
    },
  };
}
