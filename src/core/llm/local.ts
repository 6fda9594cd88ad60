// The local backend: a Qwen3 model in the transformers.js ONNX layout (config.json, tokenizer files,
// onnx/model{,_q4,_q4f16}.onnx), run in-process by @huggingface/transformers on onnxruntime-node's
// CPU provider. transformers.js is imported on first use, so the CLI starts without it and the
// bundle keeps it external (scripts/build.mjs). A model loads once per directory and dtype and is
// shared by every backend that names it.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type { ChatMessage } from '../agent/protocol.js';
import { sampleToken, seededRandom } from './sampling.js';
import { ModelError, type BackendInfo, type Completion, type CompletionRequest, type ModelBackend } from './backend.js';

export type LocalDtype = 'fp32' | 'q4' | 'q4f16';

export interface LocalBackendOptions {
  /** A model directory (transformers.js layout), or a hub model id when `allowDownload` is set. */
  modelDir: string;
  /** ONNX variant: `onnx/model.onnx` (fp32), `onnx/model_q4.onnx`, `onnx/model_q4f16.onnx`. Default q4. */
  dtype?: LocalDtype;
  /** Let transformers.js fetch a named model from the hub (off by default: nothing leaves the machine). */
  allowDownload?: boolean;
  onProgress?: (p: { file: string; loaded?: number; total?: number; status: string }) => void;
  /** Overrides config.json `max_position_embeddings`. */
  contextLength?: number;
}

const ONNX_FILE: Record<LocalDtype, string> = { fp32: 'model.onnx', q4: 'model_q4.onnx', q4f16: 'model_q4f16.onnx' };
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'];
const TEMPLATE_OPTS = { add_generation_prompt: true, enable_thinking: false } as const;

// The slice of the transformers.js API this file uses (its own typings are loose JSDoc types).
interface Tensor {
  dims: number[];
  data: ArrayLike<number | bigint>;
  tolist(): unknown;
}
interface Tokenizer {
  apply_chat_template(messages: ChatMessage[], opts: Record<string, unknown>): unknown;
  decode(ids: Array<number | bigint>, opts?: Record<string, unknown>): string;
  encode(text: string, opts?: Record<string, unknown>): number[];
}
interface CausalLM {
  generate(opts: Record<string, unknown>): Promise<Tensor>;
  generation_config?: { eos_token_id?: number | number[] | null };
  dispose(): Promise<unknown>;
}
type Transformers = typeof import('@huggingface/transformers');

interface Loaded {
  tf: Transformers;
  tokenizer: Tokenizer;
  model: CausalLM;
  contextLength: number | null;
  eos: Set<number>;
  users: number;
  /** Serializes generation: one completion at a time per model (parallelism 1). */
  queue: Promise<unknown>;
}

/** A transformers.js logits processor that samples one token per row and masks the others. */
function nucleusProcessor(tf: Transformers, temperature: number, topP: number, seed: number | undefined): unknown {
  const random = seededRandom(seed ?? (Math.random() * 2 ** 31) >>> 0);
  class Nucleus extends (tf.LogitsProcessor as unknown as new () => object) {
    _call(_ids: unknown, logits: Tensor): Tensor {
      const v = logits.dims.at(-1)!;
      const data = logits.data as Float32Array;
      for (let row = 0; row < data.length / v; row++) {
        const slice = data.subarray(row * v, (row + 1) * v);
        const pick = sampleToken(slice, temperature, topP, random);
        slice.fill(-Infinity);
        slice[pick] = 0;
      }
      return logits;
    }
  }
  return new Nucleus();
}

const cache = new Map<string, Promise<Loaded>>();
/** transformers.js settings (`env`) are global: loads run one at a time. */
let loadLock: Promise<unknown> = Promise.resolve();

function listing(dir: string): string {
  const walk = (d: string, prefix: string): string[] =>
    readdirSync(d, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(d, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
    );
  try {
    const files = walk(dir, '');
    return files.length ? files.join(', ') : '(empty)';
  } catch {
    return '(unreadable)';
  }
}

/** Hub ids look like `name` or `org/name`; anything absolute or with a leading `.` or `~` is a path. */
function looksLikeHubId(s: string): boolean {
  return /^[A-Za-z0-9][\w.-]*(\/[A-Za-z0-9][\w.-]*)?$/.test(s) && !isAbsolute(s);
}

interface Resolved {
  /** transformers.js `localModelPath` and model id. */
  root: string;
  id: string;
  location: string;
  remote: boolean;
}

function resolveModel(opts: LocalBackendOptions, dtype: LocalDtype): Resolved {
  const given = opts.modelDir.startsWith('~/') ? join(homedir(), opts.modelDir.slice(2)) : opts.modelDir;
  const dir = resolve(given);
  if (!existsSync(dir)) {
    if (looksLikeHubId(opts.modelDir)) {
      if (!opts.allowDownload)
        throw new ModelError(
          'download-disabled',
          `"${opts.modelDir}" is not a directory (${dir} does not exist) and downloading models is disabled. ` +
            `Point the model setting at a local model directory (config.json, tokenizer.json, onnx/${ONNX_FILE[dtype]}), ` +
            `or allow downloads (allowDownload: true; in the CLI --allow-download) to fetch it from the model hub.`,
        );
      return { root: '', id: opts.modelDir, location: opts.modelDir, remote: true };
    }
    throw new ModelError('not-found', `Model directory ${dir} does not exist. Check the model path (it must hold config.json, tokenizer.json and onnx/${ONNX_FILE[dtype]}).`);
  }
  if (!statSync(dir).isDirectory())
    throw new ModelError('not-found', `Model path ${dir} is a file, not a directory. Give the directory that holds config.json and onnx/.`);
  const needed = ['config.json', ...TOKENIZER_FILES, `onnx/${ONNX_FILE[dtype]}`];
  const missing = needed.filter((f) => !existsSync(join(dir, f)));
  if (missing.length) {
    const variants = (Object.keys(ONNX_FILE) as LocalDtype[]).filter((d) => existsSync(join(dir, 'onnx', ONNX_FILE[d])));
    throw new ModelError(
      'not-found',
      `Model directory ${dir} lacks ${missing.join(', ')} (dtype ${dtype}). It holds: ${listing(dir)}.` +
        (variants.length && missing.every((m) => m.startsWith('onnx/')) ? ` Available dtypes there: ${variants.join(', ')}.` : '') +
        ` Export the model with training/chorus_train/export_onnx.py, or choose a dtype the directory has.`,
    );
  }
  return { root: dirname(dir), id: basename(dir), location: dir, remote: false };
}

function readContextLength(location: string, remote: boolean): number | null {
  if (remote) return null;
  try {
    const cfg = JSON.parse(readFileSync(join(location, 'config.json'), 'utf8')) as { max_position_embeddings?: unknown };
    return typeof cfg.max_position_embeddings === 'number' ? cfg.max_position_embeddings : null;
  } catch (e) {
    throw new ModelError('corrupt', `${join(location, 'config.json')} is not valid JSON: ${(e as Error).message}`);
  }
}

async function load(r: Resolved, dtype: LocalDtype, opts: LocalBackendOptions): Promise<Loaded> {
  let tf: Transformers;
  try {
    tf = await import('@huggingface/transformers');
  } catch (e) {
    throw new ModelError('not-found', `The local model runtime (@huggingface/transformers with onnxruntime-node) is not installed: ${(e as Error).message}. Run npm ci.`);
  }
  const contextLength = readContextLength(r.location, r.remote);
  const run = async (): Promise<Loaded> => {
    const { env } = tf;
    env.allowRemoteModels = r.remote && (opts.allowDownload ?? false);
    env.allowLocalModels = !r.remote;
    if (!r.remote) env.localModelPath = r.root + sep;
    env.cacheDir = join(homedir(), '.cache', 'chorus', 'hub');
    const progress = opts.onProgress
      ? (p: { status: string; file?: string; name?: string; loaded?: number; total?: number }) =>
          opts.onProgress?.({ file: p.file ?? p.name ?? '', loaded: p.loaded, total: p.total, status: p.status })
      : undefined;
    let tokenizer: Tokenizer;
    try {
      tokenizer = (await tf.AutoTokenizer.from_pretrained(r.id, { progress_callback: progress })) as unknown as Tokenizer;
    } catch (e) {
      throw new ModelError('corrupt', `Could not load the tokenizer of ${r.location} (tokenizer.json, tokenizer_config.json): ${(e as Error).message}`);
    }
    let model: CausalLM;
    try {
      model = (await tf.AutoModelForCausalLM.from_pretrained(r.id, { dtype, device: 'cpu', progress_callback: progress })) as unknown as CausalLM;
    } catch (e) {
      const msg = (e as Error).message;
      if (r.remote && /fetch|network|ENOTFOUND|ECONN|could not locate/i.test(msg))
        throw new ModelError('connection', `Could not download ${r.id}: ${msg}`);
      throw new ModelError(
        'corrupt',
        `Could not load ${r.remote ? r.id : join(r.location, 'onnx', ONNX_FILE[dtype])} (${dtype}): ${msg}. ` +
          `The file is damaged or not a transformers.js Qwen3 export; re-export it with training/chorus_train/export_onnx.py.`,
      );
    }
    const eosCfg = model.generation_config?.eos_token_id;
    const eos = new Set<number>(eosCfg == null ? [] : Array.isArray(eosCfg) ? eosCfg : [eosCfg]);
    return { tf, tokenizer, model, contextLength, eos, users: 0, queue: Promise.resolve() };
  };
  const p = loadLock.then(run, run);
  loadLock = p.catch(() => undefined);
  return p;
}

export function createLocalBackend(opts: LocalBackendOptions): ModelBackend {
  const dtype: LocalDtype = opts.dtype ?? 'q4';
  let mine: Promise<Loaded> | null = null;
  let disposed = false;
  let where: Resolved | null = null;

  const get = (): Promise<Loaded> => {
    if (disposed) return Promise.reject(new ModelError('cancelled', 'This local backend was disposed.'));
    if (mine) return mine;
    let r: Resolved;
    try {
      r = resolveModel(opts, dtype);
    } catch (e) {
      return Promise.reject(e);
    }
    where = r;
    const key = `${r.location}\u0000${dtype}`;
    let p = cache.get(key);
    if (!p) {
      p = load(r, dtype, opts);
      cache.set(key, p);
      p.catch(() => cache.delete(key));
    }
    mine = p.then((l) => {
      l.users++;
      return l;
    });
    mine.catch(() => {
      mine = null;
    });
    return mine;
  };

  const contextOf = (l: Loaded): number | null => opts.contextLength ?? l.contextLength;
  /** The prompt's token ids under the model's chat template (Qwen3: thinking disabled). */
  const render = (l: Loaded, messages: ChatMessage[]): number[] => {
    const text = l.tokenizer.apply_chat_template(messages, { ...TEMPLATE_OPTS, tokenize: false }) as string;
    return l.tokenizer.encode(text, { add_special_tokens: false });
  };

  return {
    parallelism: 1,

    async info(): Promise<BackendInfo> {
      const l = await get();
      return { kind: 'local', model: opts.modelDir, location: where?.location ?? opts.modelDir, contextLength: contextOf(l) };
    },

    async countTokens(messages: ChatMessage[]): Promise<number | null> {
      const l = await get();
      return render(l, messages).length;
    },

    async complete(req: CompletionRequest): Promise<Completion> {
      const t0 = performance.now();
      const cancelled = (): ModelError => new ModelError('cancelled', 'The completion was cancelled.');
      if (req.signal?.aborted) throw cancelled();
      const l = await get();
      const job = async (): Promise<Completion> => {
        if (req.signal?.aborted) throw cancelled();
        const { tf } = l;
        const promptIds = render(l, req.messages);
        const promptTokens = promptIds.length;
        let maxNew = req.sampling.maxNewTokens;
        const ctx = contextOf(l);
        if (ctx != null) {
          if (promptTokens >= ctx)
            throw new ModelError(
              'context-overflow',
              `The prompt takes ${promptTokens} tokens; the model's context is ${ctx}. Shorten the design context or raise contextLength.`,
            );
          maxNew = Math.min(maxNew, ctx - promptTokens);
        }
        const input_ids = new tf.Tensor('int64', BigInt64Array.from(promptIds.map(BigInt)), [1, promptTokens]);
        const attention_mask = new tf.Tensor('int64', new BigInt64Array(promptTokens).fill(1n), [1, promptTokens]);
        const stopper = new tf.InterruptableStoppingCriteria();
        const onAbort = (): void => stopper.interrupt();
        req.signal?.addEventListener('abort', onAbort, { once: true });
        let firstTokenMs: number | null = null;
        const streamer = new tf.TextStreamer(l.tokenizer as never, {
          skip_prompt: true,
          skip_special_tokens: true,
          callback_function: (piece: string) => {
            if (piece && req.onText) req.onText(piece);
          },
          token_callback_function: () => {
            firstTokenMs ??= performance.now() - t0;
          },
        });
        const sample = req.sampling.temperature > 0;
        let out: Tensor;
        try {
          out = await l.model.generate({
            input_ids,
            attention_mask,
            max_new_tokens: maxNew,
            // Sampling is ours (sampling.ts, top-k off as the protocol says): the processor draws
            // the token and leaves only it finite, so transformers.js's greedy step picks it.
            do_sample: false,
            ...(sample ? { logits_processor: [nucleusProcessor(tf, req.sampling.temperature, req.sampling.topP, req.sampling.seed)] } : {}),
            streamer,
            stopping_criteria: [stopper],
          });
        } catch (e) {
          if (req.signal?.aborted) throw cancelled();
          throw new ModelError('corrupt', `Generation failed in ${where?.location ?? opts.modelDir}: ${(e as Error).message}`);
        } finally {
          req.signal?.removeEventListener('abort', onAbort);
        }
        if (req.signal?.aborted) throw cancelled();
        const all = Array.from(out.data as ArrayLike<bigint>, (v) => Number(v));
        const gen = all.slice(promptTokens);
        const last = gen.at(-1);
        const stopped = last !== undefined && l.eos.has(last);
        const text = l.tokenizer.decode(gen, { skip_special_tokens: true });
        return {
          text,
          promptTokens,
          completionTokens: gen.length,
          finishReason: !stopped && gen.length >= maxNew ? 'length' : 'stop',
          firstTokenMs,
          totalMs: performance.now() - t0,
        };
      };
      const p = l.queue.then(job, job);
      l.queue = p.catch(() => undefined);
      return p;
    },

    async dispose(): Promise<void> {
      if (disposed) return;
      disposed = true;
      const p = mine;
      mine = null;
      if (!p) return;
      let l: Loaded;
      try {
        l = await p;
      } catch {
        return;
      }
      if (--l.users > 0) return;
      for (const [k, v] of cache) if (v === p || (await v.catch(() => null)) === l) cache.delete(k);
      await l.queue;
      await l.model.dispose();
    },
  };
}
