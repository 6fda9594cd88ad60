// The local backend end to end on the committed tiny Qwen3 fixture (random weights, real Qwen3
// tokenizer; test/fixtures/models/tiny-qwen3/README.md): real ONNX inference through
// transformers.js and onnxruntime-node, both dtypes, streaming, token counting, the chat
// template, cancellation and the error kinds.
import { afterAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLocalBackend } from '../../src/core/llm/local.js';
import { ModelError, type ModelBackend } from '../../src/core/llm/backend.js';
import type { ChatMessage } from '../../src/core/agent/protocol.js';

const fixture = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'models', 'tiny-qwen3');
const messages: ChatMessage[] = [
  { role: 'system', content: 'You are a testbench expert.' },
  { role: 'user', content: 'Write a testbench for module counter(input clk, output [3:0] q);' },
];
/** The Qwen3 template with enable_thinking false: an empty think block opens the assistant turn. */
const expectedPrompt =
  '<|im_start|>system\nYou are a testbench expert.<|im_end|>\n' +
  '<|im_start|>user\nWrite a testbench for module counter(input clk, output [3:0] q);<|im_end|>\n' +
  '<|im_start|>assistant\n<think>\n\n</think>\n\n';

const scratch: string[] = [];
const backends: ModelBackend[] = [];
afterAll(async () => {
  for (const b of backends) await b.dispose();
  for (const d of scratch) rmSync(d, { recursive: true, force: true });
});
function backend(dtype: 'fp32' | 'q4', dir = fixture): ModelBackend {
  const b = createLocalBackend({ modelDir: dir, dtype });
  backends.push(b);
  return b;
}
async function modelError(p: Promise<unknown>): Promise<ModelError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ModelError);
  return e as ModelError;
}

describe('local backend on the tiny Qwen3 fixture', () => {
  it('renders the Qwen3 chat template with thinking disabled, and counts its tokens exactly', async () => {
    const { AutoTokenizer, env } = await import('@huggingface/transformers');
    env.allowRemoteModels = false;
    env.localModelPath = dirname(fixture) + '/';
    const tok = await AutoTokenizer.from_pretrained('tiny-qwen3');
    const rendered = tok.apply_chat_template(
      messages as never,
      { tokenize: false, add_generation_prompt: true, enable_thinking: false } as never,
    ) as unknown as string;
    expect(rendered.startsWith('<|im_start|>system\n')).toBe(true);
    expect(rendered.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
    expect(rendered).toBe(expectedPrompt);
    const ids = tok.encode(expectedPrompt, { add_special_tokens: false });
    expect(ids[0]).toBe(151644); // <|im_start|> is one special token, not text

    const b = backend('q4');
    const n = await b.countTokens(messages);
    expect(n).toBe(ids.length);
    expect(await b.countTokens(messages)).toBe(n);
    // more text, more tokens
    expect(await b.countTokens([...messages, { role: 'assistant', content: 'filename: tb_counter.sv' }])).toBeGreaterThan(n!);
  });

  for (const dtype of ['fp32', 'q4'] as const) {
    it(`generates real tokens (${dtype}), streaming pieces that make up the text`, async () => {
      const b = backend(dtype);
      const info = await b.info();
      expect(info).toMatchObject({ kind: 'local', location: fixture, contextLength: 40960 });
      expect(b.parallelism).toBe(1);
      const pieces: string[] = [];
      const r = await b.complete({
        messages,
        sampling: { temperature: 0.7, topP: 0.8, maxNewTokens: 12, seed: 7 },
        onText: (p) => pieces.push(p),
      });
      expect(r.promptTokens).toBe(await b.countTokens(messages));
      expect(r.completionTokens).toBe(12);
      expect(r.finishReason).toBe('length');
      expect(r.text.length).toBeGreaterThan(0);
      expect(pieces.length).toBeGreaterThan(0);
      expect(pieces.join('')).toBe(r.text);
      expect(r.firstTokenMs).not.toBeNull();
      expect(r.firstTokenMs!).toBeLessThanOrEqual(r.totalMs);
      // the same seed samples the same tokens; greedy decoding is deterministic too
      const again = await b.complete({ messages, sampling: { temperature: 0.7, topP: 0.8, maxNewTokens: 12, seed: 7 } });
      expect(again.text).toBe(r.text);
      // ...and another seed other tokens (the random-weight model is near uniform: sampling shows)
      const other = await b.complete({ messages, sampling: { temperature: 0.7, topP: 0.8, maxNewTokens: 12, seed: 8 } });
      expect(other.text).not.toBe(r.text);
      const g1 = await b.complete({ messages, sampling: { temperature: 0, topP: 1, maxNewTokens: 6 } });
      const g2 = await b.complete({ messages, sampling: { temperature: 0, topP: 1, maxNewTokens: 6 } });
      expect(g1.completionTokens).toBe(6);
      expect(g2.text).toBe(g1.text);
    });
  }

  it('stops on an AbortSignal with ModelError cancelled, and keeps working afterwards', async () => {
    const b = backend('q4');
    const pre = new AbortController();
    pre.abort();
    expect(
      (await modelError(b.complete({ messages, sampling: { temperature: 0.7, topP: 0.8, maxNewTokens: 8 }, signal: pre.signal }))).kind,
    ).toBe('cancelled');

    const ac = new AbortController();
    let pieces = 0;
    const started = performance.now();
    const e = await modelError(
      b.complete({
        messages,
        sampling: { temperature: 0.7, topP: 0.8, maxNewTokens: 4000 },
        signal: ac.signal,
        onText: () => {
          if (++pieces === 2) ac.abort();
        },
      }),
    );
    expect(e.kind).toBe('cancelled');
    expect(pieces).toBeLessThan(40);
    expect(performance.now() - started).toBeLessThan(20_000);
    const after = await b.complete({ messages, sampling: { temperature: 0.7, topP: 0.8, maxNewTokens: 3 } });
    expect(after.completionTokens).toBe(3);
  });

  it('caps the reply at the context length', async () => {
    const b = createLocalBackend({ modelDir: fixture, dtype: 'q4', contextLength: 70 });
    backends.push(b);
    expect((await b.info()).contextLength).toBe(70);
    const n = (await b.countTokens(messages))!;
    const r = await b.complete({ messages, sampling: { temperature: 0.7, topP: 0.8, maxNewTokens: 500, seed: 1 } });
    expect(r.completionTokens).toBe(70 - n);
    expect(r.finishReason).toBe('length');
    const tiny = createLocalBackend({ modelDir: fixture, dtype: 'q4', contextLength: 10 });
    backends.push(tiny);
    expect((await modelError(tiny.complete({ messages, sampling: { temperature: 0.7, topP: 0.8, maxNewTokens: 5 } }))).kind).toBe(
      'context-overflow',
    );
  });

  it('names the problem: missing directory, missing dtype file, hub name without downloads, corrupt ONNX', async () => {
    const missing = join(tmpdir(), 'chorus-no-such-model-dir');
    const e1 = await modelError(createLocalBackend({ modelDir: missing }).info());
    expect(e1.kind).toBe('not-found');
    expect(e1.message).toContain(missing);

    const e2 = await modelError(createLocalBackend({ modelDir: fixture, dtype: 'q4f16' }).info());
    expect(e2.kind).toBe('not-found');
    expect(e2.message).toContain('onnx/model_q4f16.onnx');
    expect(e2.message).toContain('onnx/model_q4.onnx'); // what the directory does hold
    expect(e2.message).toMatch(/Available dtypes there: fp32, q4/);

    const e3 = await modelError(createLocalBackend({ modelDir: 'Qwen/Qwen3-4B' }).countTokens(messages));
    expect(e3.kind).toBe('download-disabled');
    expect(e3.message).toMatch(/allowDownload/);

    const tmp = mkdtempSync(join(tmpdir(), 'chorus-corrupt-'));
    scratch.push(tmp);
    const copy = join(tmp, 'tiny-qwen3');
    cpSync(fixture, copy, { recursive: true });
    // the in-place cache graph (what runs by default) and the transformers.js graph, each damaged
    writeFileSync(join(copy, 'onnx', 'model.inplace.onnx'), 'this is not an ONNX protobuf'.repeat(100));
    const e4a = await modelError(createLocalBackend({ modelDir: copy, dtype: 'fp32' }).info());
    expect(e4a.kind).toBe('corrupt');
    expect(e4a.message).toContain(join(copy, 'onnx', 'model.inplace.onnx'));
    expect(e4a.message).toMatch(/re-export/);
    writeFileSync(join(copy, 'onnx', 'model.onnx'), 'this is not an ONNX protobuf'.repeat(100));
    const e4 = await modelError(createLocalBackend({ modelDir: copy, dtype: 'fp32', inplaceCache: false }).info());
    expect(e4.kind).toBe('corrupt');
    expect(e4.message).toContain(join(copy, 'onnx', 'model.onnx'));
    // the q4 variant of the same copy is intact
    const ok = createLocalBackend({ modelDir: copy, dtype: 'q4' });
    backends.push(ok);
    expect((await ok.info()).contextLength).toBe(40960);

    rmSync(join(copy, 'tokenizer.json'));
    const e5 = await modelError(createLocalBackend({ modelDir: copy, dtype: 'fp32' }).info());
    expect(e5.kind).toBe('not-found');
    expect(e5.message).toContain('tokenizer.json');
  });
});
