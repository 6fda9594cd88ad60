// The ModelBackend of an in-process engine (llama.ts, local.ts), built around the model's lifecycle
// that both engines share: the model is found and loaded on first use (one load for every backend
// that names the same model and settings: shared.ts), held while the backend lives, and given back
// on dispose(), the last holder freeing it. The engine says where its model is and how to load and
// free it, what info() reports, and its steps of complete() (localComplete.ts).
import { ModelError, type BackendInfo, type ChatMessage, type Completion, type CompletionRequest, type ModelBackend } from './backend.js';
import { acquireShared, releaseShared, type SharedModel } from './shared.js';
import { localComplete, type LocalEngine } from './localComplete.js';

/** One load of a model: its cache key (the model and the settings that change what loads), the
 * load itself, and the error a cancelled load rejects with. */
export interface ModelLoad<L> {
  key: string;
  start: (signal: AbortSignal) => Promise<L>;
  cancelled: () => ModelError;
}

/** What an engine gives localBackend(). */
export interface LocalModel<L extends SharedModel> {
  /** The message of the ModelError('cancelled') a call after dispose() rejects with. */
  disposedMessage: string;
  /** The engine's loads, shared by its backends. */
  cache: Map<string, Promise<L>>;
  /** Gives up this backend's wait on the load (the backend options' signal). */
  signal: AbortSignal | undefined;
  /** Finds the model and says how to load it; throws (a ModelError) where it is not there. Asked
   * again on each call until a load is held. */
  locate(): ModelLoad<L>;
  /** dispose() first waits for the load this backend started to end, a cancelled one included,
   * so that it has freed what it read (llama.cpp). */
  disposeAfterLoad?: boolean;
  /** Frees the model, once its last holder gives it back. */
  free(l: L): Promise<void>;
  info(l: L): BackendInfo;
  /** The engine's steps of complete(); the load is the backend's hold. */
  engine: Omit<LocalEngine<L>, 'load'>;
}

/** The backend over `m`: calls load the model (once) and hold it; dispose() gives it back. */
export function localBackend<L extends SharedModel>(m: LocalModel<L>): ModelBackend {
  let mine: Promise<L> | null = null;
  /** The load this backend waits on (see disposeAfterLoad). */
  let loading: Promise<L> | null = null;
  let disposed = false;

  const get = (): Promise<L> => {
    if (disposed) return Promise.reject(new ModelError('cancelled', m.disposedMessage));
    if (mine) return mine;
    let load: ModelLoad<L>;
    try {
      load = m.locate();
    } catch (e) {
      return Promise.reject(e);
    }
    mine = acquireShared(m.cache, load.key, load.start, m.signal, load.cancelled);
    loading = m.cache.get(load.key) ?? null;
    mine.catch(() => (mine = null));
    return mine;
  };

  const engine: LocalEngine<L> = { ...m.engine, load: get };

  return {
    parallelism: 1,

    async info(): Promise<BackendInfo> {
      return m.info(await get());
    },

    async countTokens(messages: ChatMessage[]): Promise<number | null> {
      return engine.promptIds(await get(), messages).length;
    },

    async promptIds(messages: ChatMessage[]): Promise<number[]> {
      return engine.promptIds(await get(), messages);
    },

    complete: (req: CompletionRequest): Promise<Completion> => localComplete(req, engine),

    async dispose(): Promise<void> {
      if (disposed) return;
      disposed = true;
      const p = mine;
      mine = null;
      if (m.disposeAfterLoad) await loading?.catch(() => undefined);
      await releaseShared(p, m.cache, (l) => m.free(l));
    },
  };
}
