// A GGUF writer for Qwen3-shaped models with random weights, in Node (no Python): the tests need a
// tiny GGUF beside the tiny ONNX fixture, and bench/llm a Qwen3-4B-shaped one, and training's venv
// is not always there. It writes what training/chorus_train/gguf_export.py writes (the tensor names
// and metadata llama.cpp's convert_hf_to_gguf.py uses for Qwen3; the tokenizer from tokenizer.json,
// the chat template from tokenizer_config.json), with weights drawn here instead of read from a
// checkpoint: F16 (any shape) or Q4_0 (rows a multiple of 32), norms F32.
// GGUF v3: header, key/values, tensor infos, padding to 32, tensor data each 32-aligned.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes, randomFillSync } from 'node:crypto';

export interface Qwen3Shape {
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  intermediate: number;
  vocab: number;
  contextLength: number;
  ropeTheta: number;
  rmsEps: number;
}

/** The shapes of a config.json (Hugging Face Qwen3). */
export function shapeFromConfig(configPath: string): Qwen3Shape {
  const c = JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, number>;
  return {
    hidden: c.hidden_size,
    layers: c.num_hidden_layers,
    heads: c.num_attention_heads,
    kvHeads: c.num_key_value_heads,
    headDim: c.head_dim,
    intermediate: c.intermediate_size,
    vocab: c.vocab_size,
    contextLength: c.max_position_embeddings,
    ropeTheta: c.rope_theta,
    rmsEps: c.rms_norm_eps,
  };
}

export const QWEN3_4B: Qwen3Shape = {
  hidden: 2560,
  layers: 36,
  heads: 32,
  kvHeads: 8,
  headDim: 128,
  intermediate: 9728,
  vocab: 151_936,
  contextLength: 40_960,
  ropeTheta: 1_000_000,
  rmsEps: 1e-6,
};

const T = { U32: 4, I32: 5, F32: 6, BOOL: 7, STRING: 8, ARRAY: 9 } as const;
const GGML = { F32: 0, F16: 1, Q4_0: 2 } as const;
const ALIGN = 32;

type KV =
  | [string, 'u32', number]
  | [string, 'f32', number]
  | [string, 'bool', boolean]
  | [string, 'str', string]
  | [string, 'strs', string[]]
  | [string, 'i32s', number[]];

class Bytes {
  private chunks: Buffer[] = [];
  length = 0;
  push(b: Buffer): void {
    this.chunks.push(b);
    this.length += b.length;
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  u64(v: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
  concat(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

function writeKv(o: Bytes, [key, kind, value]: KV): void {
  o.str(key);
  switch (kind) {
    case 'u32':
      o.u32(T.U32);
      o.u32(value);
      break;
    case 'f32': {
      o.u32(T.F32);
      const b = Buffer.alloc(4);
      b.writeFloatLE(value);
      o.push(b);
      break;
    }
    case 'bool':
      o.u32(T.BOOL);
      o.push(Buffer.from([value ? 1 : 0]));
      break;
    case 'str':
      o.u32(T.STRING);
      o.str(value);
      break;
    case 'strs':
      o.u32(T.ARRAY);
      o.u32(T.STRING);
      o.u64(value.length);
      for (const s of value) o.str(s);
      break;
    case 'i32s': {
      o.u32(T.ARRAY);
      o.u32(T.I32);
      o.u64(value.length);
      const b = Buffer.alloc(4 * value.length);
      value.forEach((v, i) => b.writeInt32LE(v, 4 * i));
      o.push(b);
      break;
    }
  }
}

/** Deterministic normal-ish noise (sum of uniforms from mulberry32), so a seed gives the same file. */
function noise(seed: number): () => number {
  let a = seed >>> 0;
  const u = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => (u() + u() + u() + u() - 2) * 1.732; // variance 1
}

function f16(v: number): number {
  // round-to-nearest float32 -> float16 for the small values used here (no NaN/Inf inputs)
  const f = new Float32Array([v]);
  const x = new Uint32Array(f.buffer)[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  const mant = x & 0x7fffff;
  if (exp <= 0) {
    if (exp < -10) return sign;
    const m = (mant | 0x800000) >>> (1 - exp);
    return sign | ((m + 0x1000) >>> 13);
  }
  if (exp >= 31) return sign | 0x7c00;
  return (sign | (exp << 10) | (mant >>> 13)) + ((mant >>> 12) & 1);
}

interface TensorSpec {
  name: string;
  /** GGUF order: ne[0] = the row length (Hugging Face's last dimension). */
  dims: number[];
  type: number;
  /** `norm`: all ones; `weight`: N(0, std). */
  fill: 'norm' | 'weight';
}

function tensorBytes(t: TensorSpec): number {
  const n = t.dims.reduce((a, b) => a * b, 1);
  if (t.type === GGML.F32) return 4 * n;
  if (t.type === GGML.F16) return 2 * n;
  return (n / 32) * 18;
}

/** Writes a tensor's data in pieces of whole rows (a 4B-shaped embedding is 200+ MB). */
function writeTensor(fd: number, t: TensorSpec, std: number, rnd: () => number): void {
  const row = t.dims[0];
  const rows = t.dims.slice(1).reduce((a, b) => a * b, 1);
  const rowBytes = tensorBytes({ ...t, dims: [row] });
  const perChunk = Math.max(1, Math.floor((8 << 20) / rowBytes));
  for (let r0 = 0; r0 < rows; r0 += perChunk) {
    const n = Math.min(perChunk, rows - r0);
    const b = Buffer.alloc(n * rowBytes);
    if (t.type === GGML.F32) for (let i = 0; i < n * row; i++) b.writeFloatLE(t.fill === 'norm' ? 1 : rnd() * std, 4 * i);
    else if (t.type === GGML.F16) for (let i = 0; i < n * row; i++) b.writeUInt16LE(f16(t.fill === 'norm' ? 1 : rnd() * std), 2 * i);
    else {
      // Q4_0: per 32 values an f16 scale d and 16 bytes of nibbles, value = (q - 8) * d. Uniform
      // nibbles have a standard deviation of about 4.6, so d = std / 4.6 gives N(0, std)-sized weights.
      // The nibbles come from the system's random source: gigabytes of them, drawn per value in
      // JavaScript, would take many minutes.
      randomFillSync(b);
      const d = f16(std / 4.6);
      const blocks = (n * row) / 32;
      for (let k = 0; k < blocks; k++) b.writeUInt16LE(d, 18 * k);
    }
    writeSync(fd, b);
  }
}

export interface GgufOptions {
  shape: Qwen3Shape;
  /** The folder with tokenizer.json and tokenizer_config.json (the model's own tokenizer). */
  tokenizerDir: string;
  /** `q4_0` needs rows that are multiples of 32; `f16` takes any shape. */
  type: 'f16' | 'q4_0';
  seed?: number;
  name?: string;
  /** Standard deviation of the token embedding (the tied output layer); default 0.02. A larger one
   * makes the random model's next-token distribution peaked, so engines that differ by rounding
   * (batched vs one-token passes) still agree on the argmax and on a seeded draw. */
  embeddingStd?: number;
}

/** Writes the GGUF to `out` (through a temporary file, so a half-written file never looks done). */
export function writeQwen3Gguf(out: string, o: GgufOptions): void {
  const s = o.shape;
  const tok = JSON.parse(readFileSync(join(o.tokenizerDir, 'tokenizer.json'), 'utf8')) as {
    model: { vocab: Record<string, number>; merges: Array<string | [string, string]> };
    added_tokens: Array<{ id: number; content: string; special?: boolean }>;
  };
  const tcfg = JSON.parse(readFileSync(join(o.tokenizerDir, 'tokenizer_config.json'), 'utf8')) as { chat_template?: string };
  // llama.cpp token types: 1 normal, 3 control, 4 user-defined, 5 unused
  const tokens: string[] = new Array<string>(s.vocab);
  const types: number[] = new Array<number>(s.vocab).fill(5);
  for (const [t, i] of Object.entries(tok.model.vocab)) if (i < s.vocab) [tokens[i], types[i]] = [t, 1];
  for (const a of tok.added_tokens) if (a.id < s.vocab) [tokens[a.id], types[a.id]] = [a.content, a.special ? 3 : 4];
  for (let i = 0; i < s.vocab; i++) tokens[i] ??= `[PAD${i}]`;
  const merges = tok.model.merges.map((m) => (typeof m === 'string' ? m : m.join(' ')));

  const wType = o.type === 'q4_0' ? GGML.Q4_0 : GGML.F16;
  const kvs: KV[] = [
    ['general.architecture', 'str', 'qwen3'],
    ['general.name', 'str', o.name ?? 'qwen3-random'],
    ['general.file_type', 'u32', o.type === 'q4_0' ? 2 : 1],
    ['qwen3.context_length', 'u32', s.contextLength],
    ['qwen3.embedding_length', 'u32', s.hidden],
    ['qwen3.block_count', 'u32', s.layers],
    ['qwen3.feed_forward_length', 'u32', s.intermediate],
    ['qwen3.attention.head_count', 'u32', s.heads],
    ['qwen3.attention.head_count_kv', 'u32', s.kvHeads],
    ['qwen3.attention.key_length', 'u32', s.headDim],
    ['qwen3.attention.value_length', 'u32', s.headDim],
    ['qwen3.rope.freq_base', 'f32', s.ropeTheta],
    ['qwen3.attention.layer_norm_rms_epsilon', 'f32', s.rmsEps],
    ['tokenizer.ggml.model', 'str', 'gpt2'],
    ['tokenizer.ggml.pre', 'str', 'qwen2'],
    ['tokenizer.ggml.tokens', 'strs', tokens],
    ['tokenizer.ggml.token_type', 'i32s', types],
    ['tokenizer.ggml.merges', 'strs', merges],
    ['tokenizer.ggml.bos_token_id', 'u32', 151643],
    ['tokenizer.ggml.eos_token_id', 'u32', 151645],
    ['tokenizer.ggml.padding_token_id', 'u32', 151643],
    ['tokenizer.ggml.add_bos_token', 'bool', false],
    ...(tcfg.chat_template ? [['tokenizer.chat_template', 'str', tcfg.chat_template] as KV] : []),
  ];
  const q = s.heads * s.headDim;
  const kv = s.kvHeads * s.headDim;
  const tensors: TensorSpec[] = [{ name: 'token_embd.weight', dims: [s.hidden, s.vocab], type: wType, fill: 'weight' }];
  for (let i = 0; i < s.layers; i++) {
    const p = `blk.${i}`;
    tensors.push(
      { name: `${p}.attn_norm.weight`, dims: [s.hidden], type: GGML.F32, fill: 'norm' },
      { name: `${p}.attn_q.weight`, dims: [s.hidden, q], type: wType, fill: 'weight' },
      { name: `${p}.attn_k.weight`, dims: [s.hidden, kv], type: wType, fill: 'weight' },
      { name: `${p}.attn_v.weight`, dims: [s.hidden, kv], type: wType, fill: 'weight' },
      { name: `${p}.attn_output.weight`, dims: [q, s.hidden], type: wType, fill: 'weight' },
      { name: `${p}.attn_q_norm.weight`, dims: [s.headDim], type: GGML.F32, fill: 'norm' },
      { name: `${p}.attn_k_norm.weight`, dims: [s.headDim], type: GGML.F32, fill: 'norm' },
      { name: `${p}.ffn_norm.weight`, dims: [s.hidden], type: GGML.F32, fill: 'norm' },
      { name: `${p}.ffn_gate.weight`, dims: [s.hidden, s.intermediate], type: wType, fill: 'weight' },
      { name: `${p}.ffn_up.weight`, dims: [s.hidden, s.intermediate], type: wType, fill: 'weight' },
      { name: `${p}.ffn_down.weight`, dims: [s.intermediate, s.hidden], type: wType, fill: 'weight' },
    );
  }
  tensors.push({ name: 'output_norm.weight', dims: [s.hidden], type: GGML.F32, fill: 'norm' });
  if (wType === GGML.Q4_0)
    for (const t of tensors)
      if (t.type === GGML.Q4_0 && t.dims[0] % 32) throw new Error(`${t.name}: rows of ${t.dims[0]} are not a multiple of 32; write f16`);

  const head = new Bytes();
  head.push(Buffer.from('GGUF', 'latin1'));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(kvs.length);
  for (const k of kvs) writeKv(head, k);
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    head.str(t.name);
    head.u32(t.dims.length);
    for (const d of t.dims) head.u64(d);
    head.u32(t.type);
    head.u64(offset);
    offsets.push(offset);
    offset += Math.ceil(tensorBytes(t) / ALIGN) * ALIGN;
  }
  const pad = (n: number): Buffer => Buffer.alloc((ALIGN - (n % ALIGN)) % ALIGN);
  mkdirSync(dirname(out), { recursive: true });
  // a file of its own per writer: test files running in parallel may write the same GGUF at once
  // (same seed, same bytes), and each renames a complete file into place
  const tmp = `${out}.${process.pid}.${randomBytes(4).toString('hex')}.partial`;
  const fd = openSync(tmp, 'w');
  try {
    const h = head.concat();
    writeSync(fd, h);
    writeSync(fd, pad(h.length));
    const rnd = noise(o.seed ?? 1234);
    for (const t of tensors) {
      writeTensor(fd, t, t.name === 'token_embd.weight' ? (o.embeddingStd ?? 0.02) : 0.02, rnd);
      writeSync(fd, pad(tensorBytes(t)));
    }
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, out);
}

/** The tiny fixture's shapes as a GGUF (F16: its rows of 16 are too short for 4-bit blocks),
 * written once per path. */
export function ensureTinyGguf(fixtureDir: string, out: string): string {
  if (!existsSync(out))
    writeQwen3Gguf(out, {
      shape: shapeFromConfig(join(fixtureDir, 'config.json')),
      tokenizerDir: fixtureDir,
      type: 'f16',
      name: 'tiny-qwen3',
      embeddingStd: 0.5,
    });
  return out;
}
