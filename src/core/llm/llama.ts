// The llama.cpp engine: a GGUF (what `chorus-train export --gguf` writes) run in-process by
// node-llama-cpp 3.21.1, behind the same ModelBackend as the ONNX engine. The prompt is the same:
// the model's chat template (Qwen3, thinking off) rendered by the Jinja engine transformers.js uses,
// then tokenized by llama.cpp's own tokenizer (a test checks both engines get the same ids).
//
// One context sequence per loaded model holds the KV state of everything it evaluated; a new
// completion erases only what differs from its prompt and evaluates the rest (prefix reuse across
// rounds and samples). Prompt-lookup drafting proposes the next tokens from n-grams of what the
// sequence holds (lookup.ts, the ONNX loop's drafter, as a node-llama-cpp TokenPredictor, so both
// engines draft alike; node-llama-cpp's own InputLookupTokenPredictor searches the prompt only, not
// the reply so far); llama.cpp verifies them in one batch and keeps the ones the sampler would have
// drawn anyway, so the output does not change.
// complete() is the frame both in-process engines share (localComplete.ts) around the decode loop
// here, so the two engines stream, stop and count alike; the backend's hold on the shared model is
// theirs too (localBackend.ts).
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { freemem, homedir, tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import type { ChatMessage } from './backend.js';
import { Drafter } from './lookup.js';
import { ModelError, type Completion, type CompletionRequest, type ModelBackend } from './backend.js';
import type { Reply } from './localComplete.js';
import { localBackend } from './localBackend.js';
import { physicalCores } from './cpu.js';

type NodeLlama = typeof import('node-llama-cpp');
type Llama = Awaited<ReturnType<NodeLlama['getLlama']>>;
type LlamaModel = Awaited<ReturnType<Llama['loadModel']>>;
type LlamaContext = Awaited<ReturnType<LlamaModel['createContext']>>;
type Sequence = ReturnType<LlamaContext['getSequence']>;

export interface LlamaBackendOptions {
  /** A .gguf file, or a model folder holding one (model-q4_k_m.gguf is preferred). */
  modelPath: string;
  /** The context limit, tokens (default: the model's, at most 8,192). The KV cache (147 KB per
   * token at Qwen3-4B shapes in f16, 1.2 GB for 8,192) is allocated for what the calls need, not
   * for the limit: the first call's prompt and reply with some room, grown (keeping the evaluated
   * tokens) when a later prompt or a long reply needs more, up to the limit. */
  contextLength?: number;
  /** KV cache precision: `auto` (default): f16, llama.cpp's own and the fastest (on 4B shapes at
   * a 4k prompt on the CPU, q8_0 took 2.6x the time to first token and decoded at 0.82x: bench/
   * README.md), unless memory is short (kvMemoryShort: the weights and the f16 cache at the context
   * limit would not fit in what the machine has available), then q8_0 where the model's head size
   * allows it (kvCacheFits) and a context with it can be created here, with a message; `f16`;
   * `q8_0` (half the memory, with flash attention, which llama.cpp's CPU build has; node-llama-cpp
   * marks it experimental), an error where it cannot run. info() says which one runs. */
  kvCache?: KvCacheOption;
  /** Bytes of memory `auto` may count on (default os.freemem(), MemAvailable on Linux; tests set it). */
  availableMemory?: number;
  /** Context allocation step and room, tokens (default 1,024): the allocation is a multiple of it
   * and holds at least this many tokens past what a call needs (tests use a small one to regrow). */
  contextStep?: number;
  /** Cancels loading the model: the load stops and frees what it loaded, and the calls waiting on
   * it reject with ModelError('cancelled'). Backends sharing the load stop it only all together. */
  signal?: AbortSignal;
  /** CPU threads (default: the physical cores, physicalCores()). */
  threads?: number;
  /** `auto` (default): offload to a GPU when a node-llama-cpp build for it loads, else the CPU with
   * a message; `cpu`: never. */
  gpu?: 'auto' | 'cpu';
  /** Prompt-lookup drafting (default on). */
  lookup?: boolean;
  /** Reuse the KV state of the evaluated prefix across calls (default on; off: bench/llm's baseline). */
  prefixReuse?: boolean;
  /** One-line notices (the GPU fallback). */
  onMessage?: (message: string) => void;
}

export type KvCacheOption = 'auto' | 'f16' | 'q8_0';

/**
 * Per-layer attention shapes from a GGUF's metadata as node-llama-cpp parses it
 * (model.fileInfo.metadata), read as llama.cpp reads them: head sizes from
 * `<arch>.attention.key_length` and `value_length`, else embedding_length / head_count; KV heads
 * from head_count_kv, else head_count. Counts may be per layer (arrays); the layer count is
 * block_count (`blocks`: whether the metadata gave it), else an array's length, else 1.
 */
function attentionShapes(metadata: unknown): { blocks: boolean; kvHeads: number[] | undefined; keys: number[]; values: number[] } {
  type Arch = { block_count?: unknown; embedding_length?: unknown; attention?: Record<string, unknown> };
  const m = (metadata ?? {}) as { general?: { architecture?: string } } & Record<string, Arch | undefined>;
  const arch = m.general?.architecture;
  const a = arch ? m[arch] : undefined;
  const at = a?.attention ?? {};
  const blocks = typeof a?.block_count === 'number' && a.block_count > 0;
  const layers = blocks ? (a!.block_count as number) : ([at.head_count, at.head_count_kv].find(Array.isArray)?.length ?? 1);
  const per = (v: unknown): number[] | undefined =>
    typeof v === 'number'
      ? Array<number>(layers).fill(v)
      : Array.isArray(v) && v.length === layers && v.every((x) => typeof x === 'number')
        ? (v as number[])
        : undefined;
  const heads = per(at.head_count);
  const embd = typeof a?.embedding_length === 'number' ? a.embedding_length : undefined;
  const size = (given: unknown): number[] =>
    Array.from({ length: layers }, (_, i) => (typeof given === 'number' ? given : heads && embd ? embd / heads[i] : NaN));
  return {
    blocks,
    kvHeads: at.head_count_kv === undefined ? heads : per(at.head_count_kv),
    keys: size(at.key_length),
    values: size(at.value_length),
  };
}

const isSize = (d: number): boolean => Number.isInteger(d) && d > 0;

/**
 * Whether llama.cpp can quantize this model's KV cache to q8_0: it stores K and V in blocks of 32
 * along a head, so every head size must be a multiple of 32 (Qwen3's are 128; the tiny test
 * model's 16 are not). null: the metadata does not say.
 */
export function kvCacheFits(metadata: unknown): boolean | null {
  const { keys, values } = attentionShapes(metadata);
  const sizes = [...keys, ...values];
  if (!sizes.every(isSize)) return null;
  return sizes.every((d) => d % 32 === 0);
}

/**
 * Bytes one token takes in an f16 KV cache: the sum over layers of KV heads x (key + value head
 * size) x 2 (147,456 at Qwen3-4B shapes). null: the metadata does not say.
 */
export function kvBytesPerToken(metadata: unknown): number | null {
  const { blocks, kvHeads, keys, values } = attentionShapes(metadata);
  if (!blocks || !kvHeads || ![...keys, ...values].every(isSize)) return null;
  return kvHeads.reduce((sum, h, i) => sum + h * (keys[i] + values[i]) * 2, 0);
}

/** Room beside the weights and the KV cache that `auto` wants free: compute buffers (about 0.3 GB at
 * 4B shapes), the sampler's logits, Node and the editor's own growth. */
const KV_MEMORY_MARGIN = 1024 ** 3;

/**
 * Whether memory is short for an f16 KV cache, which `auto` then halves (q8_0): the weights (the
 * engine reads the GGUF into memory), the f16 cache at the context limit and a margin do not fit
 * in `available` bytes (os.freemem(): MemAvailable on Linux). An unknown cache size is not short.
 */
export function kvMemoryShort(weightBytes: number, f16CacheBytes: number | null, available: number): boolean {
  return f16CacheBytes !== null && weightBytes + f16CacheBytes + KV_MEMORY_MARGIN > available;
}

/**
 * The KV cache type to run: `f16` and `q8_0` as asked; `auto` f16 unless `short` (memory, above),
 * then q8_0 where the head size fits and `tryQ8` (creating a small q8_0 context; null: nothing to
 * try) succeeds, told through `onMessage`, else f16 (the failure told).
 */
export async function resolveKvCache(
  want: KvCacheOption,
  fits: boolean | null,
  short: boolean,
  tryQ8: (() => Promise<void>) | null,
  onMessage: ((message: string) => void) | undefined,
  name: string,
): Promise<'f16' | 'q8_0'> {
  if (want !== 'auto') return want;
  if (!short || fits !== true) return 'f16';
  try {
    await tryQ8?.();
    onMessage?.(
      `memory is short for ${name} with an f16 KV cache: using q8_0 (half the cache; slower prompt processing on the CPU; --kv-cache f16 keeps f16)`,
    );
    return 'q8_0';
  } catch (e) {
    onMessage?.(
      `a q8_0 KV cache does not run for ${name} here (${(e as Error).message.split('\n')[0]}); using f16 (--kv-cache f16 skips the try)`,
    );
    return 'f16';
  }
}

const MAX_DEFAULT_CONTEXT = 8192;
/** How long dispose() waits for a model on which a context creation failed (see chooseKvCache()). */
const FREE_AFTER_FAILURE_MS = 5000;
/** Context allocation: the tokens a call needs plus this room (later rounds' longer prompts fit
 * without a regrow), rounded up to a multiple of it (option contextStep). */
const CONTEXT_ROOM = 1024;
/** Prompt-lookup drafts the predictor may add past the reply (lookup.ts drafts at most 8): the
 * reply stops to grow the context before a draft batch could overrun it. */
const DRAFT_ROOM = 16;
const GGUF_PREFERENCE = ['q4_k_m', 'q4_0', 'q8_0', 'f16'];

/** The GGUF of a model path: the file itself, or the preferred one in the folder; null when none. */
export function findGguf(path: string): string | null {
  const p = resolve(path.startsWith('~/') ? join(homedir(), path.slice(2)) : path);
  if (!existsSync(p)) return null;
  if (statSync(p).isFile()) return p.endsWith('.gguf') ? p : null;
  const files = readdirSync(p)
    .filter((f) => f.endsWith('.gguf'))
    .sort();
  if (!files.length) return null;
  const rank = (f: string): number => {
    const i = GGUF_PREFERENCE.findIndex((q) => f.toLowerCase().includes(q));
    return i < 0 ? GGUF_PREFERENCE.length : i;
  };
  return join(p, [...files].sort((a, b) => rank(a) - rank(b))[0]);
}

interface Loaded {
  llama: Llama;
  model: LlamaModel;
  /** Allocated on the first call and regrown as calls need (sized()); null before. */
  context: LlamaContext | null;
  sequence: Sequence | null;
  /** Tokens `context` holds at most. */
  allocated: number;
  /** Allocation step and room (CONTEXT_ROOM unless the options say). */
  step: number;
  newContext: (size: number) => Promise<LlamaContext>;
  /** Prompt-lookup drafting: a predictor per sequence (a sequence disposes its own). */
  newLookup: (() => InstanceType<NodeLlama['TokenPredictor']>) | null;
  lookup: InstanceType<NodeLlama['TokenPredictor']> | null;
  render: (messages: ChatMessage[]) => string;
  /** The limit (what info() reports). */
  contextLength: number;
  gpu: string | false;
  /** The KV cache type in use (`auto` resolved). */
  kvCache: 'f16' | 'q8_0';
  /** Context creations that failed on this model (see chooseKvCache(): freeing it may then never end). */
  failures: { contexts: number };
  users: number;
  queue: Promise<unknown>;
}

/** Models loaded and not yet freed, in this process (tests check that a cancelled load left none). */
let liveModels = 0;
export const loadedLlamaModels = (): number => liveModels;

let llamaInstance: Promise<{ llama: Llama; note: string | null }> | null = null;
/** The CPU-only runtime, also one per process (each runtime holds its own binding and listeners). */
let cpuInstance: Promise<Llama> | null = null;
const cache = new Map<string, Promise<Loaded>>();

/** One llama.cpp runtime per process: a GPU build when one loads, else the CPU build. */
async function runtime(nl: NodeLlama, gpu: 'auto' | 'cpu'): Promise<{ llama: Llama; note: string | null }> {
  const logLevel = nl.LlamaLogLevel.error;
  if (gpu === 'cpu') {
    cpuInstance ??= nl.getLlama({ gpu: false, build: 'never', logLevel });
    cpuInstance.catch(() => (cpuInstance = null));
    return { llama: await cpuInstance, note: null };
  }
  llamaInstance ??= (async () => {
    try {
      // node-llama-cpp tries the installed GPU builds best first and falls back to the CPU itself
      const llama = await nl.getLlama({ gpu: 'auto', build: 'never', logLevel });
      return {
        llama,
        note: llama.gpu === false ? 'llama.cpp found no usable GPU build here (CUDA, Vulkan or Metal); running on the CPU' : null,
      };
    } catch (e) {
      const llama = await nl.getLlama({ gpu: false, build: 'never', logLevel });
      return { llama, note: `no GPU build of llama.cpp loaded here (${(e as Error).message.split('\n')[0]}); running on the CPU` };
    }
  })();
  llamaInstance.catch(() => (llamaInstance = null));
  return llamaInstance;
}

async function renderer(gguf: string, model: LlamaModel): Promise<(messages: ChatMessage[]) => string> {
  // The folder's tokenizer_config.json is what the ONNX engine renders; the GGUF carries a copy.
  let template: string | undefined;
  const cfg = join(gguf, '..', 'tokenizer_config.json');
  if (existsSync(cfg)) template = (JSON.parse(readFileSync(cfg, 'utf8')) as { chat_template?: string }).chat_template;
  template ??= (model.fileInfo.metadata as { tokenizer?: { chat_template?: string } }).tokenizer?.chat_template;
  if (!template)
    throw new ModelError(
      'corrupt',
      `${gguf} has no chat template (tokenizer.chat_template) and no tokenizer_config.json beside it. Re-export it with chorus-train export --gguf.`,
    );
  const { Template } = await import('@huggingface/jinja');
  const t = new Template(template);
  return (messages) => t.render({ messages, add_generation_prompt: true, enable_thinking: false, bos_token: '', eos_token: '<|im_end|>' });
}

const loadCancelled = (gguf: string): ModelError => new ModelError('cancelled', `Loading ${basename(gguf)} was cancelled.`);

/** node-llama-cpp, or an error that says it is not installed. */
async function importLlama(): Promise<NodeLlama> {
  try {
    return await import('node-llama-cpp');
  } catch (e) {
    throw new ModelError('not-found', `The llama.cpp runtime (node-llama-cpp) is not installed: ${(e as Error).message}. Run npm ci.`);
  }
}

type Runtime = { llama: Llama; note: string | null };

/** The process's llama.cpp runtime (runtime()), or an error that says to use the ONNX engine. */
async function startRuntime(nl: NodeLlama, gpu: 'auto' | 'cpu'): Promise<Runtime> {
  try {
    return await runtime(nl, gpu);
  } catch (e) {
    throw new ModelError(
      'not-found',
      `No llama.cpp binary for this machine loaded (${(e as Error).message}); use the ONNX engine (--engine onnx).`,
    );
  }
}

/** The GGUF's weights: on the GPU where the runtime has one, else (or where that load fails,
 * told through onMessage) on the CPU. */
async function readWeights(rt: Runtime, gguf: string, o: LlamaBackendOptions, signal: AbortSignal): Promise<LlamaModel> {
  // node-llama-cpp stops a load on `loadSignal` between tensors and frees what it had read.
  const loadModel = (gpuLayers: number | 'auto'): Promise<LlamaModel> =>
    rt.llama.loadModel({ modelPath: gguf, gpuLayers, useMmap: false, loadSignal: signal });
  try {
    // Read, not mmap'd: on x86 llama.cpp repacks 4-bit weights into its own buffer, so with mmap the
    // file's pages stay resident beside the copy (Qwen3-4B Q4_0: peak RSS 5.6 GB mmap'd, 3.7 GB read).
    return await loadModel(rt.llama.gpu === false ? 0 : 'auto');
  } catch (e) {
    if (signal.aborted) throw loadCancelled(gguf);
    if (rt.llama.gpu === false)
      throw new ModelError(
        'corrupt',
        `Could not load ${gguf}: ${(e as Error).message}. The file is damaged or not a GGUF llama.cpp reads; re-export it with chorus-train export --gguf q4_k_m.`,
      );
    // Not enough GPU memory (or a driver problem): the CPU still works.
    o.onMessage?.(
      `loading ${basename(gguf)} on the ${rt.llama.gpu} GPU failed (${(e as Error).message.split('\n')[0]}); running on the CPU`,
    );
    try {
      return await loadModel(0);
    } catch (e2) {
      if (signal.aborted) throw loadCancelled(gguf);
      throw new ModelError(
        'corrupt',
        `Could not load ${gguf}: ${(e2 as Error).message}. Re-export it with chorus-train export --gguf q4_k_m.`,
      );
    }
  }
}

async function load(gguf: string, o: LlamaBackendOptions & { threads: number }, signal: AbortSignal): Promise<Loaded> {
  const nl = await importLlama();
  const rt = await startRuntime(nl, o.gpu ?? 'auto');
  if (signal.aborted) throw loadCancelled(gguf);
  if (rt.note) o.onMessage?.(rt.note);
  // what `auto` may count on for the weights and the KV cache, taken before the weights are read
  const available = o.availableMemory ?? freemem();
  const model = await readWeights(rt, gguf, o, signal);
  liveModels++;
  model.onDispose.createListener(() => liveModels--);
  try {
    if (signal.aborted) throw loadCancelled(gguf);
    return await prepare(nl, rt, model, gguf, o, available, signal);
  } catch (e) {
    await model.dispose();
    throw e;
  }
}

/** node-llama-cpp wants the type names in upper case ('q8_0' is ignored without an error). */
const Q8_CACHE = { experimentalKvCacheKeyType: 'Q8_0', experimentalKvCacheValueType: 'Q8_0' } as const;

/** The loaded model made ready for calls: its context limit, KV cache type and chat template. */
async function prepare(
  nl: NodeLlama,
  rt: Runtime,
  model: LlamaModel,
  gguf: string,
  o: LlamaBackendOptions & { threads: number },
  available: number,
  signal: AbortSignal,
): Promise<Loaded> {
  const trained = model.trainContextSize;
  const contextLength = Math.min(o.contextLength ?? Math.min(trained, MAX_DEFAULT_CONTEXT), trained);
  const failures = { contexts: 0 };
  const kvCache = await chooseKvCache(rt, model, gguf, o, contextLength, available, failures);
  if (signal.aborted) throw loadCancelled(gguf);
  const newContext = contextMaker(model, gguf, o, kvCache, failures);
  const render = await renderer(gguf, model);
  if (signal.aborted) throw loadCancelled(gguf);
  return {
    llama: rt.llama,
    model,
    context: null,
    sequence: null,
    allocated: 0,
    step: Math.max(16, Math.floor(o.contextStep ?? CONTEXT_ROOM)),
    newContext,
    newLookup: o.lookup === false ? null : () => promptLookup(nl),
    lookup: null,
    render,
    contextLength,
    gpu: rt.llama.gpu,
    kvCache,
    failures,
    users: 0,
    queue: Promise.resolve(),
  };
}

/**
 * The KV cache type the model runs with (resolveKvCache), or an error where q8_0 is asked for and
 * the head size rules it out. node-llama-cpp 3.21.1 leaks a context whose creation failed, and its
 * hold on the model then keeps model.dispose() waiting forever once that context is
 * garbage-collected: so what is known to fail is refused before llama.cpp is asked (the head
 * size), and what cannot be known (q8_0 on a GPU backend without the flash attention it needs) is
 * tried once on a small context at load, so info() reports the type every call will use.
 */
async function chooseKvCache(
  rt: Runtime,
  model: LlamaModel,
  gguf: string,
  o: LlamaBackendOptions & { threads: number },
  contextLength: number,
  available: number,
  failures: Loaded['failures'],
): Promise<'f16' | 'q8_0'> {
  const fits = kvCacheFits(model.fileInfo.metadata);
  const f16Cache = kvBytesPerToken(model.fileInfo.metadata);
  const kvCache = await resolveKvCache(
    o.kvCache ?? 'auto',
    fits,
    kvMemoryShort(statSync(gguf).size, f16Cache === null ? null : f16Cache * contextLength, available),
    // llama.cpp's CPU backend always has flash attention: the head size decides
    rt.llama.gpu === false
      ? null
      : async () => {
          const probe = await model
            .createContext({ contextSize: Math.min(256, contextLength), sequences: 1, threads: o.threads, ...Q8_CACHE })
            .catch((e: unknown) => {
              failures.contexts++;
              throw e;
            });
          await probe.dispose();
        },
    o.onMessage,
    basename(gguf),
  );
  if (kvCache === 'q8_0' && fits === false)
    throw new ModelError(
      'corrupt',
      `A q8_0 KV cache runs only where the model's head size is a multiple of 32 (llama.cpp quantizes K and V in blocks of 32 along a head), ` +
        `and ${basename(gguf)}'s is not. Use --kv-cache f16, or auto (chorus.model.kvCache in the editor).`,
    );
  return kvCache;
}

/** Creates the model's contexts with the chosen KV cache; a failure is counted (see chooseKvCache)
 * and said with what to change. */
function contextMaker(
  model: LlamaModel,
  gguf: string,
  o: LlamaBackendOptions & { threads: number },
  kvCache: 'f16' | 'q8_0',
  failures: Loaded['failures'],
): (size: number) => Promise<LlamaContext> {
  const kv = kvCache === 'q8_0' ? Q8_CACHE : {};
  return async (size) => {
    try {
      return await model.createContext({ contextSize: size, sequences: 1, threads: o.threads, ...kv });
    } catch (e) {
      failures.contexts++;
      if (o.kvCache === 'q8_0')
        throw new ModelError(
          'corrupt',
          `Could not allocate a ${size}-token context with a q8_0 KV cache for ${gguf}: ${(e as Error).message}. ` +
            `llama.cpp quantizes the KV cache only where the model's head size is a multiple of 32 and flash attention runs; use the f16 KV cache (--kv-cache f16).`,
        );
      throw new ModelError(
        'corrupt',
        `Could not allocate a ${size}-token context for ${gguf}: ${(e as Error).message}. Lower the context length (--context-length).`,
      );
    }
  };
}

/**
 * The sequence, in a context that holds at least `need` tokens: allocated on first use, else
 * regrown when too small. A regrow keeps up to `keep` evaluated tokens (at least one fewer than the
 * sequence holds: erasing a token is what drops the draft tokens llama.cpp evaluated past it, which
 * the state file must not carry); their KV state goes through a file (llama.cpp cannot resize a
 * context), seconds where evaluating them again would take minutes.
 */
async function sized(l: Loaded, need: number, keep: number): Promise<Sequence> {
  if (l.sequence && l.allocated >= need) return l.sequence;
  const size = Math.min(l.contextLength, Math.ceil((need + l.step) / l.step) * l.step);
  let saved: string | null = null;
  const old = l.sequence;
  if (old && keep > 0) {
    try {
      await old.eraseContextTokenRanges([{ start: Math.min(keep, old.nextTokenIndex - 1), end: old.nextTokenIndex }]);
      saved = join(tmpdir(), `chorus-kv-${process.pid}-${Date.now()}.bin`);
      await old.saveStateToFile(saved);
    } catch {
      if (saved) rmSync(saved, { force: true });
      saved = null; // evaluate the prompt again instead
    }
  }
  l.sequence = null;
  l.allocated = 0;
  if (l.context) await l.context.dispose();
  l.context = null;
  const context = await l.newContext(size);
  const lookup = l.newLookup?.() ?? null;
  const sequence = context.getSequence(lookup ? { tokenPredictor: lookup } : {});
  if (saved) {
    try {
      await sequence.loadStateFromFile(saved, { acceptRisk: true }); // the same model wrote it just now
    } catch {
      await sequence.clearHistory();
    } finally {
      rmSync(saved, { force: true });
    }
  }
  l.context = context;
  l.sequence = sequence;
  l.lookup = lookup;
  l.allocated = size;
  return sequence;
}

/** lookupDraft over the sequence's tokens (prompt and reply so far), as a node-llama-cpp predictor. */
function promptLookup(nl: NodeLlama): InstanceType<NodeLlama['TokenPredictor']> {
  class PromptLookup extends nl.TokenPredictor {
    private state: number[] = [];
    private drafter = new Drafter();
    /** The last draft, and how many of its tokens came back as the sequence's next tokens. */
    private pending: number[] = [];
    private size = 0;
    private kept = 0;
    private settle(): void {
      if (this.size) this.drafter.record(this.size, this.kept);
      this.pending = [];
      this.size = this.kept = 0;
    }
    reset({ stateTokens }: { stateTokens: readonly unknown[] }): void {
      this.settle();
      this.state = stateTokens.slice() as number[];
    }
    pushTokens(tokens: readonly unknown[]): void {
      for (const t of tokens) {
        this.state.push(t as number);
        if (!this.pending.length) continue;
        if (this.pending[0] === t) {
          this.pending.shift();
          this.kept++;
          if (!this.pending.length) this.settle();
        } else this.settle();
      }
    }
    predictTokens(): never[] {
      this.settle();
      const d = this.drafter.draft(this.state);
      this.pending = d.slice();
      this.size = d.length;
      return d as never[];
    }
  }
  return new PromptLookup();
}

/** llama.cpp's sampling options for a request: greedy at temperature 0, else with a seed (the
 * request's, or a random one). */
function samplingOf(s: CompletionRequest['sampling']): { temperature: number; topP?: number; topK?: number; seed?: number } {
  return s.temperature > 0
    ? {
        temperature: s.temperature,
        topP: s.topP,
        topK: 0,
        seed: s.seed ?? (Math.random() * 2 ** 31) >>> 0,
      }
    : { temperature: 0 };
}

/** The decode loop (the engine step of localComplete): llama.cpp evaluates the prompt past the
 * reused prefix, then samples; the context regrows when the reply outgrows it. */
async function generate(
  l: Loaded,
  ids: number[],
  reply: Reply,
  prefixReuse: boolean,
  gguf: string | null,
): Promise<Pick<Completion, 'cache' | 'drafts'>> {
  const { maxNew, tokens: gen } = reply;
  // Prefix reuse: keep the evaluated tokens this prompt starts with (at least one token must
  // be evaluated to get the next token's logits).
  const keepOf = (s: Sequence | null): number =>
    s && prefixReuse ? Math.min(s.compareContextTokens(ids as never).firstDifferentIndex, ids.length - 1) : 0;
  // Room for the prompt and the reply's first `step` tokens; a longer reply regrows it.
  let seq = await sized(l, Math.min(l.contextLength, ids.length + Math.min(maxNew, l.step) + DRAFT_ROOM), keepOf(l.sequence));
  const keep = keepOf(seq);
  if (keep < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
  let before = { ...seq.tokenPredictions };
  const drafts = { proposed: 0, accepted: 0 };
  const countDrafts = (s: Sequence): void => {
    const after = s.tokenPredictions;
    drafts.proposed += after.validated + after.refuted - before.validated - before.refuted;
    drafts.accepted += after.used - before.used;
  };
  const sampling = samplingOf(reply.request.sampling);
  try {
    let feed = ids.slice(keep);
    reply: for (;;) {
      let grow = false;
      // after a regrow, a sampled reply goes on from a random stream of its own (seed + length)
      const draw = 'seed' in sampling && gen.length ? { ...sampling, seed: ((sampling.seed ?? 0) + gen.length) >>> 0 } : sampling;
      for await (const tok of seq.evaluate(feed as never, { ...draw, yieldEogToken: true })) {
        if (reply.aborted || !reply.take(tok as number)) break reply;
        // Evaluating this token (and a draft batch after it) must fit: else regrow first.
        if (seq.nextTokenIndex + 1 + DRAFT_ROOM > l.allocated && l.allocated < l.contextLength) {
          grow = true;
          break;
        }
      }
      if (!grow) break;
      // The reply goes on in a larger context from the last token drawn, which the sequence
      // has not evaluated yet.
      countDrafts(seq);
      const held = seq.contextTokens as number[];
      seq = await sized(
        l,
        Math.min(l.contextLength, held.length + 1 + DRAFT_ROOM + Math.min(maxNew - gen.length, 2 * l.step)),
        held.length,
      );
      before = { ...seq.tokenPredictions };
      feed = [...held.slice(seq.nextTokenIndex), gen.at(-1)!]; // what the regrow did not keep, then the new token
    }
  } catch (e) {
    throw new ModelError('corrupt', `Generation failed in ${gguf}: ${(e as Error).message}`);
  }
  countDrafts(seq);
  return {
    cache: { evaluatedTokens: ids.length - keep, reusedTokens: keep, contextTokens: l.allocated },
    ...(l.lookup ? { drafts } : {}),
  };
}

/** Frees a model no backend holds any more. */
async function freeModel(l: Loaded): Promise<void> {
  await l.context?.dispose();
  // after a failed context creation node-llama-cpp may never finish freeing the model (see
  // chooseKvCache()): wait a while, then go on, so switching models cannot hang (its memory then
  // stays until the process ends)
  if (l.failures.contexts)
    await Promise.race([l.model.dispose(), new Promise<void>((ok) => setTimeout(ok, FREE_AFTER_FAILURE_MS).unref())]);
  else await l.model.dispose();
}

/** What a backend's load is shared on: the GGUF and every setting that changes what loads. */
function loadKey(file: string, opts: LlamaBackendOptions, threads: number): string {
  return [
    file,
    opts.contextLength ?? '',
    threads,
    opts.gpu ?? 'auto',
    opts.lookup ?? true,
    opts.kvCache ?? 'auto',
    opts.availableMemory ?? '',
    opts.contextStep ?? '',
  ].join('\u0000');
}

/** The error where the model path holds no GGUF. */
function noGguf(modelPath: string): ModelError {
  const p = resolve(modelPath);
  return new ModelError(
    'not-found',
    existsSync(p)
      ? `${p} holds no .gguf file. Export one with chorus-train export --gguf q4_k_m, or use the ONNX engine (--engine onnx).`
      : `Model path ${p} does not exist.`,
  );
}

export function createLlamaBackend(opts: LlamaBackendOptions): ModelBackend {
  let gguf: string | null = null;
  const promptIds = (l: Loaded, messages: ChatMessage[]): number[] => l.model.tokenize(l.render(messages), true) as number[];

  return localBackend<Loaded>({
    disposedMessage: 'This llama.cpp backend was disposed.',
    cache,
    signal: opts.signal,
    locate: () => {
      gguf = findGguf(opts.modelPath);
      if (!gguf) throw noGguf(opts.modelPath);
      const file = gguf;
      const threads = opts.threads ?? physicalCores();
      return {
        key: loadKey(file, opts, threads),
        start: (signal) => load(file, { ...opts, threads }, signal),
        cancelled: () => loadCancelled(file),
      };
    },
    // a cancelled load finishes freeing what it read first
    disposeAfterLoad: true,
    free: freeModel,
    info: (l) => ({
      kind: 'local',
      engine: 'llama',
      model: opts.modelPath,
      location: gguf ?? opts.modelPath,
      contextLength: l.contextLength,
      device: l.gpu === false ? 'cpu' : l.gpu,
      kvCache: l.kvCache,
    }),
    engine: {
      promptIds,
      contextLength: (l) => l.contextLength,
      overflow: (tokens, ctx) =>
        `The prompt takes ${tokens} tokens; the context is ${ctx}. Shorten the design context or raise the context length (--context-length).`,
      isEnd: (l, token) => l.model.isEogToken(token as never),
      // a piece is rendered after the reply's last tokens before it (a leading space depends on them)
      detokenize: (l, tokens, reply, at) => l.model.detokenize(tokens as never, false, reply.slice(Math.max(0, at - 8), at) as never),
      generate: (l, ids, reply) => generate(l, ids, reply, opts.prefixReuse !== false, gguf),
    },
  });
}
