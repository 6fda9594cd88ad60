// The local backend: a Qwen3 model in the transformers.js ONNX layout (config.json, tokenizer files,
// onnx/model{,_q4,_q4f16}.onnx), run in-process on onnxruntime-node's CPU provider. The tokenizer
// and chat template come from @huggingface/transformers. The decoder runs through the export's
// in-place KV cache graph (onnx/<variant>.inplace.onnx, which export_onnx.py writes beside each
// variant) on an onnxruntime session of its own, or, for an export without it, through
// transformers.js (onnxKv.ts says why the first is the fast one). Both runtimes are imported on
// first use, so the CLI starts without them and the bundle keeps them external. A model loads once
// per directory, dtype and threads, and is shared by every backend that names it.
// complete() is the frame both in-process engines share (localComplete.ts) around decode() here, and
// the backend's hold on the shared model is theirs too (localBackend.ts).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type { ChatMessage } from './backend.js';
import { sampleToken, seededRandom } from './sampling.js';
import { Drafter } from './lookup.js';
import { physicalCores } from './cpu.js';
import { InplaceRunner, PresentRunner, type KvRunner, type Logits, type OrtSession, type OrtTensorCtor } from './onnxKv.js';
import { ModelError, type Completion, type ModelBackend } from './backend.js';
import type { Reply } from './localComplete.js';
import { localBackend } from './localBackend.js';

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
  /** onnxruntime intra-op threads (default: the physical cores, physicalCores(), as llama.cpp). */
  threads?: number;
  /** Prompt-lookup drafting in the decode loop (default on). */
  lookup?: boolean;
  /** Reuse the keys/values of the evaluated prefix across calls (default on; off: bench/llm's baseline). */
  prefixReuse?: boolean;
  /** Run the export's in-place KV cache graph when it has one (default on; off: the transformers.js
   * past/present path, bench/llm's baseline for this lever). */
  inplaceCache?: boolean;
  /** bench/llm only: the reply's tokens, taken in place of sampled ones, every forward pass still
   * run. A random-weight model never rewrites the testbench in its prompt, as a trained one's
   * refinement reply does; scripting that reply measures what drafting costs and saves on it. */
  scriptedReply?: readonly number[];
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
  tokenizer: Tokenizer;
  /** The decoder and its KV cache: the cached tokens are the prefix a later call can reuse. */
  runner: KvRunner;
  /** Which graph runs: the in-place cache one, or transformers.js's past/present one. */
  cacheLayout: 'inplace' | 'present';
  free(): Promise<void>;
  contextLength: number | null;
  eos: Set<number>;
  users: number;
  /** Serializes generation: one completion at a time per model (parallelism 1). */
  queue: Promise<unknown>;
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

interface ModelConfigJson {
  max_position_embeddings?: unknown;
  num_hidden_layers?: unknown;
  num_attention_heads?: unknown;
  num_key_value_heads?: unknown;
  head_dim?: unknown;
  hidden_size?: unknown;
  eos_token_id?: unknown;
}

function readJson<T>(file: string): T {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch (e) {
    throw new ModelError('corrupt', `${file} is not valid JSON: ${(e as Error).message}. Re-export the model.`);
  }
}

function readConfig(location: string, remote: boolean): ModelConfigJson {
  return remote ? {} : readJson<ModelConfigJson>(join(location, 'config.json'));
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : null);

/** onnx/model_q4.onnx -> onnx/model_q4.inplace.onnx (training/chorus_train/export_onnx.py `inplace_name`). */
const inplaceFile = (dtype: LocalDtype): string => ONNX_FILE[dtype].replace(/\.onnx$/, '.inplace.onnx');

/** The end-of-sequence ids: generation_config.json's, else config.json's. */
function eosIds(location: string, cfg: ModelConfigJson): Set<number> {
  const genFile = join(location, 'generation_config.json');
  const gen = existsSync(genFile) ? readJson<{ eos_token_id?: unknown }>(genFile).eos_token_id : undefined;
  const v = gen ?? cfg.eos_token_id;
  return new Set((Array.isArray(v) ? v : v == null ? [] : [v]).filter((x): x is number => typeof x === 'number'));
}

/** The in-place cache graph on an onnxruntime session of its own. */
async function openInplace(file: string, cfg: ModelConfigJson, threads: number): Promise<{ runner: KvRunner; free: () => Promise<void> }> {
  const layers = num(cfg.num_hidden_layers);
  const heads = num(cfg.num_attention_heads);
  const kvHeads = num(cfg.num_key_value_heads) ?? heads;
  const headDim = num(cfg.head_dim) ?? (num(cfg.hidden_size) && heads ? (cfg.hidden_size as number) / heads : null);
  if (!layers || !kvHeads || !headDim)
    throw new ModelError(
      'corrupt',
      `config.json beside ${file} lacks num_hidden_layers, num_key_value_heads or head_dim. Re-export the model.`,
    );
  let ort: { InferenceSession: { create(path: string, opts: Record<string, unknown>): Promise<OrtSession> }; Tensor: OrtTensorCtor };
  try {
    ort = (await import('onnxruntime-node')) as unknown as typeof ort;
  } catch (e) {
    throw new ModelError('not-found', `onnxruntime-node is not installed: ${(e as Error).message}. Run npm ci.`);
  }
  let session: OrtSession;
  try {
    session = await ort.InferenceSession.create(file, {
      executionProviders: ['cpu'],
      graphOptimizationLevel: 'all',
      intraOpNumThreads: threads,
    });
  } catch (e) {
    throw new ModelError(
      'corrupt',
      `Could not load ${file}: ${(e as Error).message}. The file is damaged or from another exporter; re-export the model with training/chorus_train/export_onnx.py.`,
    );
  }
  return { runner: new InplaceRunner(session, ort.Tensor, { layers, kvHeads, headDim }), free: () => session.release() };
}

const loadCancelled = (r: Resolved): ModelError => new ModelError('cancelled', `Loading ${r.location} was cancelled.`);

async function load(r: Resolved, dtype: LocalDtype, opts: LocalBackendOptions & { threads: number }, signal: AbortSignal): Promise<Loaded> {
  let tf: Transformers;
  try {
    tf = await import('@huggingface/transformers');
  } catch (e) {
    throw new ModelError(
      'not-found',
      `The local model runtime (@huggingface/transformers with onnxruntime-node) is not installed: ${(e as Error).message}. Run npm ci.`,
    );
  }
  const cfg = readConfig(r.location, r.remote);
  const contextLength = num(cfg.max_position_embeddings);
  const inplace = !r.remote && opts.inplaceCache !== false && existsSync(join(r.location, 'onnx', inplaceFile(dtype)));
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
    const done = async (runner: KvRunner, free: () => Promise<void>, eos: Set<number>): Promise<Loaded> => {
      if (signal.aborted) {
        await free();
        throw loadCancelled(r);
      }
      return {
        tokenizer,
        runner,
        cacheLayout: inplace ? 'inplace' : 'present',
        free,
        contextLength,
        eos,
        users: 0,
        queue: Promise.resolve(),
      };
    };
    if (inplace) {
      const { runner, free } = await openInplace(join(r.location, 'onnx', inplaceFile(dtype)), cfg, opts.threads);
      return done(runner, free, eosIds(r.location, cfg));
    }
    let model: CausalLM;
    try {
      model = (await tf.AutoModelForCausalLM.from_pretrained(r.id, {
        dtype,
        device: 'cpu',
        progress_callback: progress,
        session_options: { intraOpNumThreads: opts.threads },
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
    const eosCfg = model.generation_config?.eos_token_id;
    const eos = new Set<number>(eosCfg == null ? [] : Array.isArray(eosCfg) ? eosCfg : [eosCfg]);
    const runner = new PresentRunner(model, tf.Tensor as unknown as OrtTensorCtor);
    return done(runner, async () => void (await model.dispose()), eos);
  };
  const p = loadLock.then(run, run);
  loadLock = p.catch(() => undefined);
  return p;
}

/** Prompt tokens per forward pass while prefilling: bounds the logits and the time a cancel waits. */
const PREFILL_CHUNK = 512;

/**
 * The decode loop (the engine step of localComplete): reuse the cached keys/values of the longest
 * common prefix, prefill the rest in chunks, then sample token by token. With lookup on, each step
 * also feeds the draft tokens that followed the reply's last n-gram in the prompt; position i's
 * logits are the ones plain decoding would see after accepting drafts 0..i-1, so drawing from them
 * with the same random stream and keeping drafts while they equal the draw gives plain decoding's
 * tokens (greedy and sampled).
 */
async function decode(
  l: Loaded,
  prompt: number[],
  reply: Reply,
  lookup: boolean,
  script: readonly number[] | undefined,
): Promise<Pick<Completion, 'cache' | 'drafts'>> {
  // Prefix reuse: the cached tokens this prompt starts with (at least one prompt token is fed, for
  // its logits). The runner's cache always matches its tokens (a forward pass that fails changes
  // neither; a cancel lands between passes), so what a cancelled call evaluated stays reusable.
  const kv = l.runner;
  let same = 0;
  while (same < kv.tokens.length && same < prompt.length && kv.tokens[same] === prompt[same]) same++;
  const keep = Math.min(same, prompt.length - 1);
  kv.truncate(keep);
  const forward = (feed: number[], logitsKept: number): Promise<Logits> => kv.forward(feed, logitsKept);

  let logits: Logits | null = null;
  for (let i = keep; i < prompt.length; i += PREFILL_CHUNK) {
    if (reply.aborted) throw reply.cancelled();
    logits = await forward(prompt.slice(i, i + PREFILL_CHUNK), 1);
  }
  const vocab = logits!.dims.at(-1)!;
  const { temperature, topP, seed } = reply.request.sampling;
  const random = seededRandom(seed ?? (Math.random() * 2 ** 31) >>> 0);
  const gen = reply.tokens;
  const draw = (rows: Logits, row: number): number =>
    script
      ? script[gen.length] // the scripted reply's next token (LocalBackendOptions.scriptedReply)
      : sampleToken(rows.data.subarray(row * vocab, (row + 1) * vocab), temperature, topP, random);

  let proposed = 0;
  let accepted = 0;
  const drafter = lookup ? new Drafter() : null;
  let next = draw(logits!, 0);
  while (reply.take(next)) {
    if (reply.aborted) throw reply.cancelled();
    const draft = drafter ? drafter.draft([...prompt, ...gen]).slice(0, Math.max(0, reply.maxNew - gen.length - 1)) : [];
    const base = kv.tokens.length;
    const rows = await forward([next, ...draft], draft.length + 1);
    proposed += draft.length;
    let i = 0;
    let tok = draw(rows, 0);
    let going = true;
    while (i < draft.length && tok === draft[i]) {
      accepted++;
      i++;
      if (!(going = reply.take(tok))) break;
      tok = draw(rows, i);
    }
    drafter?.record(draft.length, i);
    if (!going) break;
    // keep the cache for the fed token and the accepted drafts only
    if (i < draft.length) kv.truncate(base + 1 + i);
    next = tok;
  }
  return {
    cache: { evaluatedTokens: prompt.length - keep, reusedTokens: keep },
    ...(lookup ? { drafts: { proposed, accepted } } : {}),
  };
}

export function createLocalBackend(opts: LocalBackendOptions): ModelBackend {
  const dtype: LocalDtype = opts.dtype ?? 'q4';
  let where: Resolved | null = null;

  const contextOf = (l: Loaded): number | null => opts.contextLength ?? l.contextLength;
  /** The prompt's token ids under the model's chat template (Qwen3: thinking disabled). */
  const render = (l: Loaded, messages: ChatMessage[]): number[] => {
    const text = l.tokenizer.apply_chat_template(messages, { ...TEMPLATE_OPTS, tokenize: false }) as string;
    return l.tokenizer.encode(text, { add_special_tokens: false });
  };

  return localBackend<Loaded>({
    disposedMessage: 'This local backend was disposed.',
    cache,
    signal: opts.signal,
    locate: () => {
      const r = resolveModel(opts, dtype);
      where = r;
      const threads = opts.threads ?? physicalCores();
      return {
        key: `${r.location}\u0000${dtype}\u0000${threads}\u0000${opts.inplaceCache !== false}`,
        start: (signal) => load(r, dtype, { ...opts, threads }, signal),
        cancelled: () => loadCancelled(r),
      };
    },
    free: async (l) => {
      l.runner.truncate(0);
      await l.free();
    },
    info: (l) => ({
      kind: 'local',
      engine: 'onnx',
      device: 'cpu',
      onnxCache: l.cacheLayout,
      model: opts.modelDir,
      location: where?.location ?? opts.modelDir,
      contextLength: contextOf(l),
    }),
    engine: {
      promptIds: render,
      contextLength: contextOf,
      overflow: (tokens, ctx) =>
        `The prompt takes ${tokens} tokens; the model's context is ${ctx}. Shorten the design context or raise contextLength.`,
      replyLimit: opts.scriptedReply?.length,
      isEnd: (l, token) => l.eos.has(token),
      detokenize: (l, tokens) => l.tokenizer.decode(tokens, { skip_special_tokens: true }),
      generate: (l, prompt, reply) => {
        if (opts.prefixReuse === false) l.runner.truncate(0);
        return decode(l, prompt, reply, opts.lookup !== false, opts.scriptedReply);
      },
    },
  });
}
