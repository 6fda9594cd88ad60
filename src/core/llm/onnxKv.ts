// The ONNX engine's two ways of running a decoder with a KV cache (src/core/llm/local.ts drives
// both through `KvRunner`):
//
// - `InplaceRunner`, for the `onnx/<variant>.inplace.onnx` graph that training/chorus_train/
//   export_onnx.py writes beside every variant. The cache lives in one JavaScript buffer per layer
//   and key/value, [1, kv_heads, capacity, head_dim], which onnxruntime-node reads where it is (the
//   binding wraps a typed array without copying it); the graph returns only the new tokens' keys
//   and values, which are written into the next slots. A token costs what the attention reads.
// - `PresentRunner`, for a plain transformers.js export (past_key_values in, present out): each
//   call gets the whole cache back as new tensors, concatenated inside the graph and copied out by
//   the binding, 295 KB per cached token at Qwen3-4B shapes (1.2 GB per token at a 4k prompt).
//   Kept for exports that lack the in-place graph.
//
// Either runner holds the tokens whose keys and values it has, so a later call can keep the
// longest common prefix (`truncate`) and evaluate only the rest.

/** Logits rows as a runner returns them: `dims` [1, rows, vocab]. */
export interface Logits {
  dims: number[];
  data: Float32Array;
}

export interface KvRunner {
  /** The tokens whose keys and values the cache holds, in order. */
  readonly tokens: number[];
  /** Keeps the first `n` cached tokens (n <= tokens.length). */
  truncate(n: number): void;
  /** Evaluates `feed` after the cached tokens, caches it, and returns the last `logitsKept` rows. */
  forward(feed: number[], logitsKept: number): Promise<Logits>;
}

// ---------------------------------------------------------------------------------------------
// in place

/** The slice of onnxruntime-node's API used here. */
export interface OrtTensorLike {
  dims: readonly number[];
  data: unknown;
}
export interface OrtSession {
  run(feeds: Record<string, unknown>): Promise<Record<string, OrtTensorLike>>;
  release(): Promise<void>;
}
export type OrtTensorCtor = new (type: string, data: unknown, dims: number[]) => unknown;

export interface CacheShape {
  layers: number;
  kvHeads: number;
  headDim: number;
}

/** Capacity grows in steps of this many slots (a grow copies the cache once). */
const GROW = 256;

export class InplaceRunner implements KvRunner {
  readonly tokens: number[] = [];
  private capacity = 1;
  /** [layer * 2 + (0 key | 1 value)] -> [kvHeads, capacity, headDim] */
  private bufs: Float32Array[];

  constructor(
    private readonly session: OrtSession,
    private readonly Tensor: OrtTensorCtor,
    private readonly shape: CacheShape,
  ) {
    this.bufs = Array.from({ length: shape.layers * 2 }, () => new Float32Array(shape.kvHeads * shape.headDim));
  }

  truncate(n: number): void {
    // slots past the prefix are ignored by the graph (masked by past_length): nothing to clear
    this.tokens.length = Math.min(n, this.tokens.length);
  }

  /** Memory the cache holds, in bytes. */
  get bytes(): number {
    return this.bufs.reduce((s, b) => s + b.byteLength, 0);
  }

  private grow(need: number): void {
    if (need <= this.capacity) return;
    const { kvHeads, headDim } = this.shape;
    const cap = Math.ceil((need + GROW) / GROW) * GROW;
    const used = this.tokens.length * headDim;
    this.bufs = this.bufs.map((old) => {
      const b = new Float32Array(kvHeads * cap * headDim);
      for (let h = 0; h < kvHeads; h++)
        b.set(old.subarray(h * this.capacity * headDim, h * this.capacity * headDim + used), h * cap * headDim);
      return b;
    });
    this.capacity = cap;
  }

  async forward(feed: number[], logitsKept: number): Promise<Logits> {
    const { layers, kvHeads, headDim } = this.shape;
    const T = this.Tensor;
    const past = this.tokens.length;
    const feeds: Record<string, unknown> = {
      input_ids: new T('int64', BigInt64Array.from(feed.map(BigInt)), [1, feed.length]),
      past_length: new T('int64', BigInt64Array.from([BigInt(past)]), []),
      num_logits_to_keep: new T('int64', BigInt64Array.from([BigInt(logitsKept)]), []),
    };
    const dims = [1, kvHeads, this.capacity, headDim];
    for (let i = 0; i < layers; i++) {
      feeds[`cache.${i}.key`] = new T('float32', this.bufs[2 * i], dims);
      feeds[`cache.${i}.value`] = new T('float32', this.bufs[2 * i + 1], dims);
    }
    const out = await this.session.run(feeds);
    // write the new keys/values ([1, kvHeads, feed, headDim]) into slots past..past+feed-1
    this.grow(past + feed.length);
    const q = feed.length;
    const cap = this.capacity;
    for (let i = 0; i < layers; i++) {
      for (const [j, kind] of [
        [0, 'key'],
        [1, 'value'],
      ] as const) {
        const src = out[`new.${i}.${kind}`].data as Float32Array;
        const dst = this.bufs[2 * i + j];
        for (let h = 0; h < kvHeads; h++) dst.set(src.subarray(h * q * headDim, (h + 1) * q * headDim), (h * cap + past) * headDim);
      }
    }
    this.tokens.push(...feed);
    const logits = out.logits;
    return { dims: [...logits.dims], data: logits.data as Float32Array };
  }
}

// ---------------------------------------------------------------------------------------------
// past / present (transformers.js)

export interface TfTensor {
  dims: number[];
  data: ArrayLike<number | bigint>;
}
export interface TfModel {
  forward(inputs: Record<string, unknown>): Promise<Record<string, TfTensor>>;
}

export class PresentRunner implements KvRunner {
  readonly tokens: number[] = [];
  private past: Record<string, TfTensor> | null = null;

  constructor(
    private readonly model: TfModel,
    private readonly Tensor: OrtTensorCtor,
  ) {}

  truncate(n: number): void {
    if (n >= this.tokens.length) return;
    this.tokens.length = n;
    if (!this.past) return;
    if (n === 0) {
      this.past = null;
      return;
    }
    this.past = Object.fromEntries(Object.entries(this.past).map(([k, v]) => [k, this.truncateKv(v, n)]));
  }

  /** The first `len` positions of a [1, heads, seq, dim] cache tensor (a copy: heads are outermost). */
  private truncateKv(t: TfTensor, len: number): TfTensor {
    const [b, h, seq, d] = t.dims;
    if (len >= seq) return t;
    const src = t.data as Float32Array;
    const out = new Float32Array(b * h * len * d);
    for (let i = 0; i < b * h; i++) out.set(src.subarray(i * seq * d, i * seq * d + len * d), i * len * d);
    return new this.Tensor('float32', out, [b, h, len, d]) as TfTensor;
  }

  async forward(feed: number[], logitsKept: number): Promise<Logits> {
    const T = this.Tensor;
    const total = this.tokens.length + feed.length;
    const out = await this.model.forward({
      input_ids: new T('int64', BigInt64Array.from(feed.map(BigInt)), [1, feed.length]),
      attention_mask: new T('int64', new BigInt64Array(total).fill(1n), [1, total]),
      num_logits_to_keep: new T('int64', BigInt64Array.from([BigInt(logitsKept)]), []),
      ...(this.past ? { past_key_values: this.past } : {}),
    });
    const next: Record<string, TfTensor> = {};
    for (const k in out) if (k.startsWith('present')) next[k.replace('present', 'past_key_values')] = out[k];
    this.past = next;
    this.tokens.push(...feed);
    return { dims: out.logits.dims, data: out.logits.data as Float32Array };
  }
}
