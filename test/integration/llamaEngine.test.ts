// The two in-process engines on the tiny Qwen3 shapes: the llama.cpp engine (node-llama-cpp 3.21.1)
// on a GGUF written here from the fixture's tokenizer and config (test/support/gguf.ts, random
// weights), and the ONNX engine on the committed fixture. Both build the same prompt token ids;
// both reuse the evaluated prefix of an earlier call and say how much; prompt-lookup drafting
// leaves the output unchanged; cancel answers at once; `auto` picks llama.cpp when there is a GGUF.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLlamaBackend, findGguf, loadedLlamaModels } from '../../src/core/llm/llama.js';
import { createLocalBackend } from '../../src/core/llm/local.js';
import { createBackend, resolveEngine } from '../../src/core/llm/factory.js';
import { ModelError, type Completion, type ModelBackend } from '../../src/core/llm/backend.js';
import type { ChatMessage } from '../../src/core/agent/protocol.js';
import { ensureTinyGguf, shapeFromConfig, writeQwen3Gguf } from '../support/gguf.js';
import { modelIdentity, sampleKey } from '../../src/core/eval/cache.js';
import type { EvalTask } from '../../src/core/eval/task.js';

const fixture = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'models', 'tiny-qwen3');
/** The fixture's folder plus a GGUF, as `chorus-train export --gguf` leaves a model folder. */
let both: string;
const scratch: string[] = [];
const backends: ModelBackend[] = [];
const keep = <T extends ModelBackend>(b: T): T => (backends.push(b), b);

beforeAll(() => {
  const cacheDir = join(tmpdir(), 'chorus-test-models');
  mkdirSync(cacheDir, { recursive: true });
  const gguf = ensureTinyGguf(fixture, join(cacheDir, 'tiny-qwen3-f16-v2.gguf'));
  both = mkdtempSync(join(tmpdir(), 'chorus-both-'));
  scratch.push(both);
  cpSync(fixture, both, { recursive: true });
  cpSync(gguf, join(both, 'model-f16.gguf'));
}, 120_000);
/** A copy of a model folder: loaded models (and their KV caches) are shared by folder, so a model
 * another test left warm would change what a first prompt reuses. */
function ownCopy(dir: string): string {
  const own = mkdtempSync(join(tmpdir(), 'chorus-own-model-'));
  scratch.push(own);
  cpSync(dir, own, { recursive: true });
  return own;
}

afterAll(async () => {
  for (const b of backends) await b.dispose();
  for (const d of scratch) rmSync(d, { recursive: true, force: true });
});

const testbench = [
  'module tb_counter;',
  '  logic clk = 0, rst = 1; logic [3:0] q;',
  '  counter uut(.clk(clk), .rst(rst), .q(q));',
  '  always #5 clk = ~clk;',
  '  initial begin repeat (4) @(posedge clk); rst = 0; repeat (40) @(posedge clk); $finish; end',
  'endmodule',
].join('\n');
const first: ChatMessage[] = [
  { role: 'system', content: 'You are a testbench expert. Reply with one SystemVerilog testbench.' },
  {
    role: 'user',
    content:
      'Design:\n```systemverilog\nmodule counter(input clk, input rst, output logic [3:0] q);\n  always_ff @(posedge clk) q <= rst ? 0 : q + 1;\nendmodule\n```\nWrite a testbench.',
  },
];
const refine: ChatMessage[] = [
  ...first,
  { role: 'assistant', content: `filename: tb_counter.sv\n\`\`\`systemverilog\n${testbench}\n\`\`\`` },
  { role: 'user', content: 'Coverage 62%. Uncovered: the wrap from 15 to 0. Improve the testbench.' },
];
const greedy = { temperature: 0, topP: 1, maxNewTokens: 16 };
const sampled = { temperature: 0.7, topP: 0.8, maxNewTokens: 16, seed: 11 };

async function modelError(p: Promise<unknown>): Promise<ModelError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ModelError);
  return e as ModelError;
}

describe('engines: llama.cpp and ONNX', () => {
  it('build the same prompt token ids for the same conversation (chat template, thinking off)', async () => {
    const llama = keep(createLlamaBackend({ modelPath: both, gpu: 'cpu', threads: 1, contextLength: 2048 }));
    const onnx = keep(createLocalBackend({ modelDir: fixture, dtype: 'q4' }));
    for (const conv of [
      first,
      refine,
      [{ role: 'user', content: 'ünïcödé 🙂 \t tabs  and\n\nnewlines <|im_end|> literal' }] as ChatMessage[],
    ]) {
      const a = await llama.promptIds!(conv);
      const b = await onnx.promptIds!(conv);
      expect(a.length).toBeGreaterThan(10);
      expect(a).toEqual(b);
      expect(await llama.countTokens(conv)).toBe(b.length);
    }
    expect(await llama.info()).toMatchObject({ kind: 'local', engine: 'llama', device: 'cpu', contextLength: 2048 });
    expect(await onnx.info()).toMatchObject({ kind: 'local', engine: 'onnx' });
  });

  it('llama.cpp: streams pieces that make up the text, same seed same text, stops at max tokens', async () => {
    const b = keep(createLlamaBackend({ modelPath: both, gpu: 'cpu', threads: 1, contextLength: 2048 }));
    const pieces: string[] = [];
    const r = await b.complete({ messages: first, sampling: sampled, onText: (p) => pieces.push(p) });
    expect(r.completionTokens).toBe(16);
    expect(r.finishReason).toBe('length');
    expect(r.promptTokens).toBe(await b.countTokens(first));
    expect(pieces.join('')).toBe(r.text);
    expect(r.firstTokenMs).not.toBeNull();
    // again: the prompt's KV state is reused now (only its last token is evaluated)
    const again = await b.complete({ messages: first, sampling: sampled });
    expect(again.cache!.reusedTokens).toBe(r.promptTokens - 1);
    expect(again.text).toBe(r.text);
    const other = await b.complete({ messages: first, sampling: { ...sampled, seed: 12 } });
    expect(other.text).not.toBe(r.text);
  });

  // 'onnx': the export's in-place KV cache graph; 'onnx present': transformers.js past/present
  for (const engine of ['llama', 'onnx', 'onnx present'] as const) {
    // A model loads once per process and its cached state is shared by the backends naming it;
    // `fresh` gives another instance (another context length, or another thread count).
    // `own`: a copy of the model folder, so no other test's warm cache is shared (see ownCopy).
    const make = (lookup: boolean, fresh = false, own?: string): ModelBackend =>
      keep(
        engine === 'llama'
          ? createLlamaBackend({ modelPath: own ?? both, gpu: 'cpu', threads: 1, contextLength: fresh ? 1536 : 2048, lookup })
          : createLocalBackend({
              modelDir: own ?? fixture,
              dtype: 'fp32',
              lookup,
              inplaceCache: engine === 'onnx',
              ...(fresh ? { threads: 1 } : {}),
            }),
      );

    it(`${engine}: reuses the evaluated prefix across calls and says how much; the reply is the one a fresh engine gives`, async () => {
      // What is reused depends on what the shared model evaluated before: this test needs a cold one.
      const own = ownCopy(engine === 'llama' ? both : fixture);
      const b = make(false, false, own);
      const r1 = await b.complete({ messages: first, sampling: greedy });
      const n1 = r1.promptTokens;
      expect(r1.cache).toMatchObject({ evaluatedTokens: n1, reusedTokens: 0 });
      // a refinement round starts with the first turn: only the new suffix is evaluated
      const r2 = await b.complete({ messages: refine, sampling: greedy });
      const n2 = r2.promptTokens;
      expect(r2.cache!.reusedTokens).toBeGreaterThanOrEqual(n1 - 6); // the assistant header differs
      expect(r2.cache!.reusedTokens).toBeLessThanOrEqual(n1);
      expect(r2.cache!.evaluatedTokens).toBe(n2 - r2.cache!.reusedTokens);
      // the same prompt again: everything but the last token is reused
      const r3 = await b.complete({ messages: refine, sampling: greedy });
      expect(r3.cache).toMatchObject({ evaluatedTokens: 1, reusedTokens: n2 - 1 });
      expect(r3.text).toBe(r2.text);
      const fresh = make(false, true, own);
      const f2 = await fresh.complete({ messages: refine, sampling: greedy });
      expect(f2.cache!.reusedTokens).toBe(0);
      expect(f2.text).toBe(r2.text);
      // back to the first prompt: the cache is cut back to the common prefix, not thrown away
      const r4 = await b.complete({ messages: first, sampling: greedy });
      expect(r4.cache!.reusedTokens).toBe(r2.cache!.reusedTokens);
      expect(r4.text).toBe(r1.text);
    });

    it(`${engine}: prompt-lookup drafting gives plain decoding's tokens (greedy; sampled at the same seed)`, async () => {
      const plain = make(false);
      const drafted = make(true);
      let proposed = 0;
      let accepted = 0;
      // a refinement prompt holds the previous reply, which the next one resembles
      const previous = await plain.complete({ messages: first, sampling: { ...greedy, maxNewTokens: 32 } });
      const again: ChatMessage[] = [
        ...first,
        { role: 'assistant', content: previous.text },
        { role: 'user', content: 'Coverage 40%. Improve the testbench.' },
      ];
      for (const sampling of [
        { ...greedy, maxNewTokens: 32 },
        { ...sampled, maxNewTokens: 32 },
      ]) {
        for (const messages of [again, refine]) {
          const a: Completion = await plain.complete({ messages, sampling });
          const b: Completion = await drafted.complete({ messages, sampling });
          expect(b.text).toBe(a.text);
          expect(b.completionTokens).toBe(a.completionTokens);
          expect(a.drafts).toBeUndefined();
          proposed += b.drafts!.proposed;
          accepted += b.drafts!.accepted;
        }
      }
      // the random model repeats itself, so drafts are proposed and some are right
      expect(proposed).toBeGreaterThan(0);
      expect(accepted).toBeGreaterThan(0);
      expect(accepted).toBeLessThanOrEqual(proposed);
    });

    it(`${engine}: cancel rejects at once (under 1 s) and the engine keeps working`, async () => {
      const b = make(true);
      const ac = new AbortController();
      let pieces = 0;
      let abortedAt = 0;
      const e = await modelError(
        b.complete({
          messages: refine,
          sampling: { ...sampled, maxNewTokens: 2000 },
          signal: ac.signal,
          onText: () => {
            if (++pieces === 3) {
              abortedAt = performance.now();
              ac.abort();
            }
          },
        }),
      );
      expect(e.kind).toBe('cancelled');
      expect(performance.now() - abortedAt).toBeLessThan(1000);
      const after = await b.complete({ messages: first, sampling: { ...greedy, maxNewTokens: 3 } });
      expect(after.completionTokens).toBe(3);
    });
  }

  it('onnx: the in-place KV cache graph gives the tokens of the transformers.js past/present path, and info() says which runs', async () => {
    const own = ownCopy(fixture);
    for (const dtype of ['fp32', 'q4'] as const) {
      const inplace = keep(createLocalBackend({ modelDir: own, dtype, lookup: false }));
      const present = keep(createLocalBackend({ modelDir: own, dtype, lookup: false, inplaceCache: false }));
      expect((await inplace.info()).onnxCache).toBe('inplace');
      expect((await present.info()).onnxCache).toBe('present');
      // prompt in chunks, then token by token; then a refinement prompt on the cut-back cache
      for (const messages of [first, refine, first]) {
        const a = await inplace.complete({ messages, sampling: { ...greedy, maxNewTokens: 48 } });
        const b = await present.complete({ messages, sampling: { ...greedy, maxNewTokens: 48 } });
        expect(a.completionTokens).toBe(48);
        expect(a.text).toBe(b.text);
        expect(a.cache).toEqual(b.cache);
      }
    }
    // an export without the in-place graph (a plain transformers.js export) runs the other path
    const plain = mkdtempSync(join(tmpdir(), 'chorus-plain-'));
    scratch.push(plain);
    cpSync(fixture, plain, { recursive: true });
    rmSync(join(plain, 'onnx', 'model.inplace.onnx'));
    expect((await keep(createLocalBackend({ modelDir: plain, dtype: 'fp32' })).info()).onnxCache).toBe('present');
  });

  it('auto takes llama.cpp when the folder has a GGUF, ONNX otherwise; the named engine wins', async () => {
    expect(findGguf(both)).toBe(join(both, 'model-f16.gguf'));
    expect(findGguf(fixture)).toBeNull();
    expect(resolveEngine({ modelDir: both, engine: 'auto' })).toBe('llama');
    expect(resolveEngine({ modelDir: fixture })).toBe('onnx');
    expect(resolveEngine({ modelDir: both, engine: 'onnx' })).toBe('onnx');
    const a = keep(await createBackend({ kind: 'local', modelDir: both, engine: 'auto', gpu: 'cpu', threads: 1, contextLength: 2048 }));
    expect((await a.info()).engine).toBe('llama');
    const o = keep(await createBackend({ kind: 'local', modelDir: both, engine: 'onnx' }));
    expect((await o.info()).engine).toBe('onnx');
    // llama on a folder without a GGUF: says what to do
    const e = await modelError(createLlamaBackend({ modelPath: fixture, gpu: 'cpu' }).info());
    expect(e.kind).toBe('not-found');
    expect(e.message).toMatch(/no \.gguf file.*--engine onnx/);
    expect(existsSync(both)).toBe(true);
  });

  it('llama.cpp: a context too small for the prompt is a context-overflow error', async () => {
    const b = keep(createLlamaBackend({ modelPath: both, gpu: 'cpu', contextLength: 32 }));
    expect((await modelError(b.complete({ messages: refine, sampling: greedy }))).kind).toBe('context-overflow');
  });
  it('llama.cpp: the context is allocated for what the calls need and regrows, keeping the evaluated tokens and the reply', async () => {
    // contextStep 64: allocations in 64-token steps, so a 200-token reply and a longer prompt regrow it
    const sized = (lookup: boolean): ModelBackend =>
      keep(createLlamaBackend({ modelPath: both, gpu: 'cpu', threads: 1, contextLength: 2000, contextStep: 64, lookup }));
    const whole = keep(
      createLlamaBackend({ modelPath: both, gpu: 'cpu', threads: 1, contextLength: 2000, contextStep: 4096, lookup: false }),
    );
    const long = { temperature: 0, topP: 1, maxNewTokens: 200 };
    const w1 = await whole.complete({ messages: first, sampling: long });
    expect(w1.cache!.contextTokens).toBe(2000); // one allocation at the limit
    for (const lookup of [false, true]) {
      const b = sized(lookup);
      const r1 = await b.complete({ messages: first, sampling: long });
      // first allocation: prompt + 64 reply tokens + 16 draft room + 64 room, rounded up to 64
      const firstAllocation = Math.ceil((r1.promptTokens + 64 + 16 + 64) / 64) * 64;
      expect(r1.completionTokens).toBe(200); // the reply ran past the first allocation ...
      expect(r1.cache!.contextTokens).toBeGreaterThan(firstAllocation); // ... which grew under it
      expect(r1.cache!.contextTokens).toBeLessThan(2000);
      expect(r1.text).toBe(w1.text); // and the reply is plain decoding's
      // a longer prompt that starts with the first: the context regrows and keeps the prefix
      const bigger: ChatMessage[] = [
        ...refine.slice(0, -1),
        { role: 'user', content: `${refine.at(-1)!.content}\n${'Uncovered: the wrap from 15 to 0 under reset. '.repeat(40)}` },
      ];
      const r2 = await b.complete({ messages: bigger, sampling: greedy });
      expect(r2.promptTokens).toBeGreaterThan(r1.cache!.contextTokens!);
      expect(r2.cache!.contextTokens).toBeGreaterThan(r1.cache!.contextTokens!);
      expect(r2.cache!.reusedTokens).toBeGreaterThanOrEqual(r1.promptTokens - 6);
      const w2 = await whole.complete({ messages: bigger, sampling: greedy });
      expect(r2.text).toBe(w2.text);
    }
  });

  it('llama.cpp: a cancelled load rejects with the cancellation error and leaves no model loaded', async () => {
    const before = loadedLlamaModels();
    // contextLength 1000: a cache key of its own, so this is a new load
    const opts = { modelPath: both, gpu: 'cpu' as const, threads: 1, contextLength: 1000 };
    const ac = new AbortController();
    const b = createLlamaBackend({ ...opts, signal: ac.signal });
    const p = b.info();
    ac.abort();
    const e = await modelError(p);
    expect(e.kind).toBe('cancelled');
    expect(e.message).toMatch(/Loading .*\.gguf was cancelled/);
    await modelError(b.complete({ messages: first, sampling: greedy })); // the backend stays cancelled
    await b.dispose(); // returns once the stopped load has freed what it read
    expect(loadedLlamaModels()).toBe(before);
    // two backends share a load: one giving up leaves it to the other
    const ac2 = new AbortController();
    const quitter = createLlamaBackend({ ...opts, signal: ac2.signal });
    const stayer = createLlamaBackend(opts);
    const q = quitter.info();
    const s = stayer.info();
    ac2.abort();
    expect((await modelError(q)).kind).toBe('cancelled');
    expect((await s).engine).toBe('llama');
    expect(loadedLlamaModels()).toBe(before + 1);
    await quitter.dispose();
    await stayer.dispose();
    expect(loadedLlamaModels()).toBe(before);
  });

  it('llama.cpp: the KV cache under auto is f16, and q8_0 when memory is short where the head size is a multiple of 32; info() and eval say which', async () => {
    // llama.cpp quantizes K and V in blocks of 32 along a head: the fixture's heads of 16 cannot, heads of 32 can
    const dir = mkdtempSync(join(tmpdir(), 'chorus-kv-auto-'));
    scratch.push(dir);
    const head32 = join(dir, 'model-f16.gguf');
    writeQwen3Gguf(head32, {
      shape: { ...shapeFromConfig(join(fixture, 'config.json')), headDim: 32 },
      tokenizerDir: fixture,
      type: 'f16',
      embeddingStd: 0.5,
    });
    const messages: string[] = [];
    const opts = { gpu: 'cpu' as const, threads: 1, contextLength: 1024, onMessage: (m: string) => void messages.push(m) };
    // plenty of memory (this machine's): f16, the fastest, nothing said
    const plenty = keep(createLlamaBackend({ ...opts, modelPath: head32 }));
    expect((await plenty.info()).kvCache).toBe('f16');
    expect(messages).toEqual([]);
    // short (1 MB available): q8_0, told
    const q = keep(createLlamaBackend({ ...opts, modelPath: head32, availableMemory: 1e6 }));
    const qi = await q.info();
    expect(qi).toMatchObject({ engine: 'llama', kvCache: 'q8_0' });
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/memory is short .*using q8_0/);
    messages.length = 0;
    const r = await q.complete({ messages: first, sampling: { ...greedy, maxNewTokens: 4 } });
    expect(r.completionTokens).toBe(4);
    const f = keep(createLlamaBackend({ ...opts, modelPath: head32, kvCache: 'f16' }));
    const fi = await f.info();
    expect(fi.kvCache).toBe('f16');
    // heads of 16: auto takes f16 without trying (no message), an explicit q8_0 still fails with what to do
    const t = keep(createLlamaBackend({ ...opts, modelPath: both, availableMemory: 1e6 }));
    expect((await t.info()).kvCache).toBe('f16');
    expect((await t.complete({ messages: first, sampling: { ...greedy, maxNewTokens: 2 } })).completionTokens).toBe(2);
    expect(messages).toEqual([]);
    // (refused at load, before llama.cpp is asked: a failed context creation in node-llama-cpp can
    // keep the model from being freed, which the dispose in afterAll would wait on)
    const before = loadedLlamaModels();
    const explicit = keep(createLlamaBackend({ ...opts, modelPath: both, kvCache: 'q8_0' }));
    expect((await modelError(explicit.info())).message).toMatch(/q8_0 KV cache .*head size is a multiple of 32.*--kv-cache f16/);
    expect((await modelError(explicit.complete({ messages: first, sampling: greedy }))).kind).toBe('corrupt');
    expect(loadedLlamaModels()).toBe(before);
    // eval keeps the resolved type: auto's q8_0 results (memory short) and f16's have different identities
    const auto = modelIdentity({ kind: 'local', modelDir: dir, engine: 'llama' }, qi);
    const f16 = modelIdentity({ kind: 'local', modelDir: dir, engine: 'llama', kvCache: 'f16' }, fi);
    expect(auto).toMatchObject({ engine: 'llama', kvCache: 'q8_0' });
    expect(f16).toMatchObject({ engine: 'llama', kvCache: 'f16' });
  });

  it('onnx: a cancelled load rejects with the cancellation error and a later load works', async () => {
    const ac = new AbortController();
    const b = createLocalBackend({ modelDir: fixture, dtype: 'q4', threads: 1, signal: ac.signal });
    const p = b.info();
    ac.abort();
    expect((await modelError(p)).kind).toBe('cancelled');
    await b.dispose();
    const again = keep(createLocalBackend({ modelDir: fixture, dtype: 'q4', threads: 1 }));
    expect((await again.info()).engine).toBe('onnx');
  });
  it('eval: the two engines on one model folder have different identities, so their results never merge', async () => {
    const task: EvalTask = { id: 't', designFiles: [], specFiles: [], top: 'counter', instance: 'uut', coverageTarget: 100 };
    const keys = new Set<string>();
    const ids: Record<string, unknown>[] = [];
    for (const engine of ['llama', 'onnx'] as const) {
      const config = { kind: 'local' as const, modelDir: both, engine, gpu: 'cpu' as const, threads: 1 };
      const b = keep(await createBackend(config));
      const id = modelIdentity(config, await b.info());
      ids.push(id);
      keys.add(
        sampleKey({
          task,
          row: { kind: 'model', identity: id },
          sample: 0,
          seed: 1,
          settings: {},
          simulator: { name: 'v', version: '1' },
          limits: {},
        }),
      );
    }
    expect(ids[0]).toMatchObject({ kind: 'local', engine: 'llama', kvCache: 'f16' });
    expect(String(ids[0].weights)).toMatch(/\.gguf$/);
    expect(ids[1]).toMatchObject({ kind: 'local', engine: 'onnx', dtype: 'q4' });
    expect(keys.size).toBe(2);
  });
});
