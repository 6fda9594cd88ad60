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
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import type { ChatMessage } from './backend.js';
import { Drafter } from './lookup.js';
import { ModelError, abortable, type BackendInfo, type Completion, type CompletionRequest, type ModelBackend } from './backend.js';
import { releaseShared } from './shared.js';

type NodeLlama = typeof import('node-llama-cpp');
type Llama = Awaited<ReturnType<NodeLlama['getLlama']>>;
type LlamaModel = Awaited<ReturnType<Llama['loadModel']>>;
type LlamaContext = Awaited<ReturnType<LlamaModel['createContext']>>;
type Sequence = ReturnType<LlamaContext['getSequence']>;

export interface LlamaBackendOptions {
  /** A .gguf file, or a model folder holding one (model-q4_k_m.gguf is preferred). */
  modelPath: string;
  /** Context to allocate, tokens (default: the model's, at most 8,192: the KV cache is allocated
   * up front, 147 KB per token at Qwen3-4B shapes, 1.2 GB for 8,192). */
  contextLength?: number;
  /** CPU threads (default: llama.cpp's count of physical cores). */
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

const MAX_DEFAULT_CONTEXT = 8192;
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
  context: LlamaContext;
  sequence: Sequence;
  lookup: InstanceType<NodeLlama['TokenPredictor']> | null;
  render: (messages: ChatMessage[]) => string;
  contextLength: number;
  gpu: string | false;
  users: number;
  queue: Promise<unknown>;
}

let llamaInstance: Promise<{ llama: Llama; note: string | null }> | null = null;
const cache = new Map<string, Promise<Loaded>>();

/** One llama.cpp runtime per process: a GPU build when one loads, else the CPU build. */
async function runtime(nl: NodeLlama, gpu: 'auto' | 'cpu'): Promise<{ llama: Llama; note: string | null }> {
  const logLevel = nl.LlamaLogLevel.error;
  if (gpu === 'cpu') return { llama: await nl.getLlama({ gpu: false, build: 'never', logLevel }), note: null };
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

async function load(gguf: string, o: LlamaBackendOptions): Promise<Loaded> {
  let nl: NodeLlama;
  try {
    nl = await import('node-llama-cpp');
  } catch (e) {
    throw new ModelError('not-found', `The llama.cpp runtime (node-llama-cpp) is not installed: ${(e as Error).message}. Run npm ci.`);
  }
  let rt: { llama: Llama; note: string | null };
  try {
    rt = await runtime(nl, o.gpu ?? 'auto');
  } catch (e) {
    throw new ModelError(
      'not-found',
      `No llama.cpp binary for this machine loaded (${(e as Error).message}); use the ONNX engine (--engine onnx).`,
    );
  }
  if (rt.note) o.onMessage?.(rt.note);
  let model: LlamaModel;
  try {
    // Read, not mmap'd: on x86 llama.cpp repacks 4-bit weights into its own buffer, so with mmap the
    // file's pages stay resident beside the copy (Qwen3-4B Q4_0: peak RSS 5.6 GB mmap'd, 3.7 GB read).
    model = await rt.llama.loadModel({ modelPath: gguf, gpuLayers: rt.llama.gpu === false ? 0 : 'auto', useMmap: false });
  } catch (e) {
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
      model = await rt.llama.loadModel({ modelPath: gguf, gpuLayers: 0, useMmap: false });
    } catch (e2) {
      throw new ModelError(
        'corrupt',
        `Could not load ${gguf}: ${(e2 as Error).message}. Re-export it with chorus-train export --gguf q4_k_m.`,
      );
    }
  }
  const trained = model.trainContextSize;
  const contextLength = Math.min(o.contextLength ?? Math.min(trained, MAX_DEFAULT_CONTEXT), trained);
  let context: LlamaContext;
  try {
    context = await model.createContext({ contextSize: contextLength, sequences: 1, ...(o.threads ? { threads: o.threads } : {}) });
  } catch (e) {
    await model.dispose();
    throw new ModelError(
      'corrupt',
      `Could not allocate a ${contextLength}-token context for ${gguf}: ${(e as Error).message}. Lower the context length (--context-length).`,
    );
  }
  const lookup = o.lookup === false ? null : promptLookup(nl);
  const sequence = context.getSequence(lookup ? { tokenPredictor: lookup } : {});
  return {
    llama: rt.llama,
    model,
    context,
    sequence,
    lookup,
    render: await renderer(gguf, model),
    contextLength,
    gpu: rt.llama.gpu,
    users: 0,
    queue: Promise.resolve(),
  };
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

export function createLlamaBackend(opts: LlamaBackendOptions): ModelBackend {
  let mine: Promise<Loaded> | null = null;
  let disposed = false;
  let gguf: string | null = null;

  const get = (): Promise<Loaded> => {
    if (disposed) return Promise.reject(new ModelError('cancelled', 'This llama.cpp backend was disposed.'));
    if (mine) return mine;
    gguf = findGguf(opts.modelPath);
    if (!gguf) {
      const p = resolve(opts.modelPath);
      return Promise.reject(
        new ModelError(
          'not-found',
          existsSync(p)
            ? `${p} holds no .gguf file. Export one with chorus-train export --gguf q4_k_m, or use the ONNX engine (--engine onnx).`
            : `Model path ${p} does not exist.`,
        ),
      );
    }
    const key = `${gguf}\u0000${opts.contextLength ?? ''}\u0000${opts.threads ?? ''}\u0000${opts.gpu ?? 'auto'}\u0000${opts.lookup ?? true}`;
    let p = cache.get(key);
    if (!p) {
      p = load(gguf, opts);
      cache.set(key, p);
      p.catch(() => cache.delete(key));
    }
    mine = p.then((l) => {
      l.users++;
      return l;
    });
    mine.catch(() => (mine = null));
    return mine;
  };

  const promptIds = (l: Loaded, messages: ChatMessage[]): number[] => l.model.tokenize(l.render(messages), true) as number[];

  return {
    parallelism: 1,

    async info(): Promise<BackendInfo> {
      const l = await get();
      return {
        kind: 'local',
        engine: 'llama',
        model: opts.modelPath,
        location: gguf ?? opts.modelPath,
        contextLength: l.contextLength,
        device: l.gpu === false ? 'cpu' : l.gpu,
      };
    },

    async countTokens(messages: ChatMessage[]): Promise<number | null> {
      return promptIds(await get(), messages).length;
    },

    async promptIds(messages: ChatMessage[]): Promise<number[]> {
      return promptIds(await get(), messages);
    },

    async complete(req: CompletionRequest): Promise<Completion> {
      const t0 = performance.now();
      const cancelled = (): ModelError => new ModelError('cancelled', 'The completion was cancelled.');
      if (req.signal?.aborted) throw cancelled();
      const l = await get();
      const job = async (): Promise<Completion> => {
        if (req.signal?.aborted) throw cancelled();
        const ids = promptIds(l, req.messages);
        if (ids.length >= l.contextLength)
          throw new ModelError(
            'context-overflow',
            `The prompt takes ${ids.length} tokens; the context is ${l.contextLength}. Shorten the design context or raise the context length (--context-length).`,
          );
        const maxNew = Math.min(req.sampling.maxNewTokens, l.contextLength - ids.length);
        const seq = l.sequence;
        // Prefix reuse: keep the evaluated tokens this prompt starts with (at least one token must
        // be evaluated to get the next token's logits).
        const same = opts.prefixReuse === false ? 0 : seq.compareContextTokens(ids as never).firstDifferentIndex;
        const keep = Math.min(same, ids.length - 1);
        if (keep < seq.nextTokenIndex) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
        const before = { ...seq.tokenPredictions };
        const sampling =
          req.sampling.temperature > 0
            ? {
                temperature: req.sampling.temperature,
                topP: req.sampling.topP,
                topK: 0,
                seed: req.sampling.seed ?? (Math.random() * 2 ** 31) >>> 0,
              }
            : { temperature: 0 };
        const gen: number[] = [];
        let pending: number[] = [];
        let firstTokenMs: number | null = null;
        let stopped = false;
        const flush = (final: boolean): void => {
          if (!pending.length || !req.onText) return;
          const piece = l.model.detokenize(
            pending as never,
            false,
            gen.slice(Math.max(0, gen.length - pending.length - 8), gen.length - pending.length) as never,
          );
          if (!final && piece.endsWith('\uFFFD')) return; // half a UTF-8 character: wait for the rest
          pending = [];
          if (piece) req.onText(piece);
        };
        try {
          for await (const tok of seq.evaluate(ids.slice(keep) as never, { ...sampling, yieldEogToken: true })) {
            firstTokenMs ??= performance.now() - t0;
            if (req.signal?.aborted) break;
            if (l.model.isEogToken(tok)) {
              stopped = true;
              break;
            }
            gen.push(tok as number);
            pending.push(tok as number);
            flush(false);
            if (gen.length >= maxNew) break;
          }
        } catch (e) {
          if (req.signal?.aborted) throw cancelled();
          throw new ModelError('corrupt', `Generation failed in ${gguf}: ${(e as Error).message}`);
        }
        if (req.signal?.aborted) throw cancelled();
        flush(true);
        const after = seq.tokenPredictions;
        const drafted = after.validated + after.refuted - before.validated - before.refuted;
        return {
          text: l.model.detokenize(gen as never, false),
          promptTokens: ids.length,
          completionTokens: gen.length,
          finishReason: !stopped && gen.length >= maxNew ? 'length' : 'stop',
          firstTokenMs,
          totalMs: performance.now() - t0,
          cache: { evaluatedTokens: ids.length - keep, reusedTokens: keep },
          ...(l.lookup ? { drafts: { proposed: drafted, accepted: after.used - before.used } } : {}),
        };
      };
      const p = l.queue.then(job, job);
      l.queue = p.catch(() => undefined);
      // Cancel answers at once: a prompt being evaluated finishes its batch in the background.
      return abortable(p, req.signal, cancelled);
    },

    async dispose(): Promise<void> {
      if (disposed) return;
      disposed = true;
      const p = mine;
      mine = null;
      await releaseShared(p, cache, async (l) => {
        await l.context.dispose();
        await l.model.dispose();
      });
    },
  };
}
