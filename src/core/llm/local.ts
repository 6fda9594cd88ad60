// The local backend: a Qwen3 model in the transformers.js ONNX layout (config.json, tokenizer files,
// onnx/model{,_q4,_q4f16}.onnx), run in-process by @huggingface/transformers on onnxruntime-node's
// CPU provider. transformers.js is imported on first use, so the CLI starts without it and the
// bundle keeps it external (scripts/build.mjs). A model loads once per directory and dtype and is
// shared by every backend that names it.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type { ChatMessage } from './backend.js';
import { sampleToken, seededRandom } from './sampling.js';
import { Drafter } from './lookup.js';
import { ModelError, abortable, type BackendInfo, type Completion, type CompletionRequest, type ModelBackend } from './backend.js';
import { acquireShared, releaseShared } from './shared.js';

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
  /** onnxruntime intra-op threads (default: its own choice, the physical cores). */
  threads?: number;
  /** Prompt-lookup drafting in the decode loop (default on). */
  lookup?: boolean;
  /** Reuse the keys/values of the evaluated prefix across calls (default on; off: bench/llm's baseline). */
  prefixReuse?: boolean;
  /** Cancels loading the model: checked between the tokenizer and the model, and after the model
   * (transformers.js cannot stop a session being created), which is then freed; the calls waiting
   * on it reject with ModelError('cancelled'). Backends sharing the load stop it only all together. */
  signal?: AbortSignal;
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
  forward(inputs: Record<string, unknown>): Promise<Record<string, Tensor>>;
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
  /** The tokens whose keys and values `past` holds: the longest prefix a later call can reuse. */
  state: { tokens: number[]; past: Record<string, Tensor> } | null;
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
    throw new ModelError(
      'not-found',
      `Model directory ${dir} does not exist. Check the model path (it must hold config.json, tokenizer.json and onnx/${ONNX_FILE[dtype]}).`,
    );
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

const loadCancelled = (r: Resolved): ModelError => new ModelError('cancelled', `Loading ${r.location} was cancelled.`);

async function load(r: Resolved, dtype: LocalDtype, opts: LocalBackendOptions, signal: AbortSignal): Promise<Loaded> {
  let tf: Transformers;
  try {
    tf = await import('@huggingface/transformers');
  } catch (e) {
    throw new ModelError(
      'not-found',
      `The local model runtime (@huggingface/transformers with onnxruntime-node) is not installed: ${(e as Error).message}. Run npm ci.`,
    );
  }
  const contextLength = readContextLength(r.location, r.remote);
  const run = async (): Promise<Loaded> => {
    if (signal.aborted) throw loadCancelled(r);
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
      throw new ModelError(
        'corrupt',
        `Could not load the tokenizer of ${r.location} (tokenizer.json, tokenizer_config.json): ${(e as Error).message}`,
      );
    }
    if (signal.aborted) throw loadCancelled(r);
    let model: CausalLM;
    try {
      model = (await tf.AutoModelForCausalLM.from_pretrained(r.id, {
        dtype,
        device: 'cpu',
        progress_callback: progress,
        ...(opts.threads ? { session_options: { intraOpNumThreads: opts.threads } } : {}),
      })) as unknown as CausalLM;
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
    if (signal.aborted) {
      await model.dispose();
      throw loadCancelled(r);
    }
    const eosCfg = model.generation_config?.eos_token_id;
    const eos = new Set<number>(eosCfg == null ? [] : Array.isArray(eosCfg) ? eosCfg : [eosCfg]);
    return { tf, tokenizer, model, contextLength, eos, users: 0, queue: Promise.resolve(), state: null };
  };
  const p = loadLock.then(run, run);
  loadLock = p.catch(() => undefined);
  return p;
}

/** Prompt tokens per forward pass while prefilling: bounds the logits and the time a cancel waits. */
const PREFILL_CHUNK = 512;

/** The first `len` positions of a [1, heads, seq, dim] cache tensor (a copy: heads are outermost). */
function truncateKv(tf: Transformers, t: Tensor, len: number): Tensor {
  const [b, h, seq, d] = t.dims;
  if (len >= seq) return t;
  const src = t.data as Float32Array;
  const Ctor = src.constructor as new (n: number) => Float32Array;
  const out = new Ctor(b * h * len * d);
  for (let i = 0; i < b * h; i++) out.set(src.subarray(i * seq * d, i * seq * d + len * d), i * len * d);
  return new tf.Tensor((t as unknown as { type: string }).type as never, out as never, [b, h, len, d]) as unknown as Tensor;
}

function truncatePast(tf: Transformers, past: Record<string, Tensor>, len: number): Record<string, Tensor> {
  return Object.fromEntries(Object.entries(past).map(([k, v]) => [k, truncateKv(tf, v, len)]));
}

type DecodeResult = Pick<Completion, 'text' | 'completionTokens' | 'finishReason' | 'firstTokenMs' | 'cache' | 'drafts'>;

/**
 * The decode loop: reuse the cached keys/values of the longest common prefix, prefill the rest in
 * chunks, then sample token by token. With lookup on, each step also feeds the draft tokens that
 * followed the reply's last n-gram in the prompt; position i's logits are the ones plain decoding
 * would see after accepting drafts 0..i-1, so drawing from them with the same random stream and
 * keeping drafts while they equal the draw gives plain decoding's tokens (greedy and sampled).
 */
async function decode(
  l: Loaded,
  prompt: number[],
  maxNew: number,
  req: CompletionRequest,
  t0: number,
  cancelled: () => ModelError,
  lookup: boolean,
): Promise<DecodeResult> {
  const { tf } = l;
  const ids = (a: number[]): unknown => new tf.Tensor('int64', BigInt64Array.from(a.map(BigInt)), [1, a.length]);
  const ones = (n: number): unknown => new tf.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]);
  const scalar = (k: number): unknown => new tf.Tensor('int64', BigInt64Array.from([BigInt(k)]), []);

  // Prefix reuse: the cached tokens this prompt starts with (at least one prompt token is fed, for
  // its logits). The cache is taken now and put back at the end: a failed call leaves none.
  const st = l.state;
  l.state = null;
  let same = 0;
  if (st) while (same < st.tokens.length && same < prompt.length && st.tokens[same] === prompt[same]) same++;
  const keep = Math.min(same, prompt.length - 1);
  let past: Record<string, Tensor> | null = st && keep > 0 ? truncatePast(tf, st.past, keep) : null;
  const kvTokens = prompt.slice(0, keep);

  const forward = async (feed: number[], logitsKept: number): Promise<Tensor> => {
    const out = await l.model.forward({
      input_ids: ids(feed),
      attention_mask: ones(kvTokens.length + feed.length),
      num_logits_to_keep: scalar(logitsKept),
      ...(past ? { past_key_values: past } : {}),
    });
    const next: Record<string, Tensor> = {};
    for (const k in out) if (k.startsWith('present')) next[k.replace('present', 'past_key_values')] = out[k];
    past = next;
    kvTokens.push(...feed);
    return out.logits;
  };

  let logits: Tensor | null = null;
  for (let i = keep; i < prompt.length; i += PREFILL_CHUNK) {
    if (req.signal?.aborted) throw cancelled();
    logits = await forward(prompt.slice(i, i + PREFILL_CHUNK), 1);
  }
  const vocab = logits!.dims.at(-1)!;
  const temperature = req.sampling.temperature;
  const random = seededRandom(req.sampling.seed ?? (Math.random() * 2 ** 31) >>> 0);
  const draw = (rows: Tensor, row: number): number => {
    const data = rows.data as Float32Array;
    return sampleToken(data.subarray(row * vocab, (row + 1) * vocab), temperature, req.sampling.topP, random);
  };

  const gen: number[] = [];
  let pending: number[] = [];
  const flush = (final: boolean): void => {
    if (!pending.length || !req.onText) return;
    const piece = l.tokenizer.decode(pending, { skip_special_tokens: true });
    if (!final && piece.endsWith('\uFFFD')) return; // half a UTF-8 character: wait for the rest
    pending = [];
    if (piece) req.onText(piece);
  };
  let firstTokenMs: number | null = null;
  let stopped = false;
  let proposed = 0;
  let accepted = 0;
  /** Takes one sampled token; false when generation ends with it. */
  const take = (tok: number): boolean => {
    firstTokenMs ??= performance.now() - t0;
    if (l.eos.has(tok)) {
      stopped = true;
      return false;
    }
    gen.push(tok);
    pending.push(tok);
    flush(false);
    return gen.length < maxNew;
  };

  const drafter = lookup ? new Drafter() : null;
  let next = draw(logits!, 0);
  while (take(next)) {
    if (req.signal?.aborted) throw cancelled();
    const draft = drafter ? drafter.draft([...prompt, ...gen]).slice(0, Math.max(0, maxNew - gen.length - 1)) : [];
    const base = kvTokens.length;
    const rows = await forward([next, ...draft], draft.length + 1);
    proposed += draft.length;
    let i = 0;
    let tok = draw(rows, 0);
    let going = true;
    while (i < draft.length && tok === draft[i]) {
      accepted++;
      i++;
      if (!(going = take(tok))) break;
      tok = draw(rows, i);
    }
    drafter?.record(draft.length, i);
    if (!going) break;
    // keep the cache for the fed token and the accepted drafts only
    if (i < draft.length) {
      past = truncatePast(tf, past!, base + 1 + i);
      kvTokens.length = base + 1 + i;
    }
    next = tok;
  }
  if (req.signal?.aborted) throw cancelled();
  flush(true);
  if (past) l.state = { tokens: kvTokens, past };
  return {
    text: l.tokenizer.decode(gen, { skip_special_tokens: true }),
    completionTokens: gen.length,
    finishReason: !stopped && gen.length >= maxNew ? 'length' : 'stop',
    firstTokenMs,
    cache: { evaluatedTokens: prompt.length - keep, reusedTokens: keep },
    ...(lookup ? { drafts: { proposed, accepted } } : {}),
  };
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
    const key = `${r.location}\u0000${dtype}\u0000${opts.threads ?? ''}`;
    mine = acquireShared(
      cache,
      key,
      (signal) => load(r, dtype, opts, signal),
      opts.signal,
      () => loadCancelled(r),
    );
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
      return {
        kind: 'local',
        engine: 'onnx',
        device: 'cpu',
        model: opts.modelDir,
        location: where?.location ?? opts.modelDir,
        contextLength: contextOf(l),
      };
    },

    async countTokens(messages: ChatMessage[]): Promise<number | null> {
      const l = await get();
      return render(l, messages).length;
    },

    async promptIds(messages: ChatMessage[]): Promise<number[]> {
      return render(await get(), messages);
    },

    async complete(req: CompletionRequest): Promise<Completion> {
      const t0 = performance.now();
      const cancelled = (): ModelError => new ModelError('cancelled', 'The completion was cancelled.');
      if (req.signal?.aborted) throw cancelled();
      const l = await abortable(get(), req.signal, cancelled);
      const job = async (): Promise<Completion> => {
        if (req.signal?.aborted) throw cancelled();
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
        if (opts.prefixReuse === false) l.state = null;
        const out = await decode(l, promptIds, maxNew, req, t0, cancelled, opts.lookup !== false);
        return { ...out, promptTokens, totalMs: performance.now() - t0 };
      };
      const p = l.queue.then(job, job);
      l.queue = p.catch(() => undefined);
      // Cancel answers at once; a forward pass under way finishes in the background.
      return abortable(p, req.signal, cancelled);
    },

    async dispose(): Promise<void> {
      if (disposed) return;
      disposed = true;
      const p = mine;
      mine = null;
      await releaseShared(p, cache, async (l) => {
        l.state = null;
        await l.model.dispose();
      });
    },
  };
}
