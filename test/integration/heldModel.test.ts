// The editor worker's held model (src/extension/worker/process/heldModel.ts) on the real llama.cpp
// engine and the tiny GGUF: a Generate cancelled while its model loads stops the load and leaves
// nothing held, so the next request loads afresh instead of awaiting the cancelled load; a changed
// model setting (here the KV cache type) is another model, which frees the held one first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { heldModel, makeBackend, releaseModel } from '../../src/extension/worker/process/heldModel.js';
import { loadedLlamaModels } from '../../src/core/llm/llama.js';
import { ModelError } from '../../src/core/llm/backend.js';
import type { ModelConfig } from '../../src/extension/worker/protocol.js';
import { ensureTinyGguf } from '../support/gguf.js';

const fixture = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'models', 'tiny-qwen3');
let dir: string;
let config: ModelConfig;

beforeAll(() => {
  const cacheDir = join(tmpdir(), 'chorus-test-models');
  mkdirSync(cacheDir, { recursive: true });
  const gguf = ensureTinyGguf(fixture, join(cacheDir, 'tiny-qwen3-f16-v2.gguf'));
  dir = mkdtempSync(join(tmpdir(), 'chorus-held-'));
  cpSync(gguf, join(dir, 'model-f16.gguf'));
  config = { kind: 'local', modelDir: dir, engine: 'llama', gpu: 'cpu', threads: 1, contextLength: 512 };
}, 120_000);
afterAll(async () => {
  await releaseModel();
  rmSync(dir, { recursive: true, force: true });
});

async function rejection(p: Promise<unknown>): Promise<ModelError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ModelError);
  return e as ModelError;
}

describe('the worker’s held model', () => {
  it('a load cancelled by its request is dropped and freed; the next request loads afresh', async () => {
    const before = loadedLlamaModels();
    // cancelled while loading
    const ac = new AbortController();
    const b = (await makeBackend(config, undefined, ac.signal))!;
    expect(heldModel()).toEqual({ key: JSON.stringify(config), loaded: false });
    ac.abort();
    expect(heldModel()).toBeNull(); // dropped at once, before the load has finished stopping
    expect((await rejection(b.info())).kind).toBe('cancelled');
    await b.dispose();
    await releaseModel(); // waits for the dropped backend to free what its load read
    expect(loadedLlamaModels()).toBe(before);
    // cancelled before the request got to the model
    const gone = new AbortController();
    gone.abort();
    expect((await rejection(makeBackend(config, undefined, gone.signal))).kind).toBe('cancelled');
    expect(heldModel()).toBeNull();
    // the next request, same settings: a fresh load that works and stays held
    const next = (await makeBackend(config, undefined, new AbortController().signal))!;
    expect((await next.info()).engine).toBe('llama');
    await next.dispose(); // the request's end leaves the model loaded
    await new Promise((r) => setImmediate(r));
    expect(heldModel()).toEqual({ key: JSON.stringify(config), loaded: true });
    expect(loadedLlamaModels()).toBe(before + 1);
    // a request cancelled after the load leaves the loaded model held
    const late = new AbortController();
    const again = (await makeBackend(config, undefined, late.signal))!;
    late.abort();
    expect(heldModel()?.loaded).toBe(true);
    expect((await again.info()).kvCache).toBe('f16'); // auto on heads of 16
    // another KV cache setting is another model: the held one is freed first
    const f16 = { ...config, kvCache: 'f16' as const };
    const other = (await makeBackend(f16))!;
    expect(heldModel()?.key).toBe(JSON.stringify(f16));
    expect((await other.info()).kvCache).toBe('f16');
    expect(loadedLlamaModels()).toBe(before + 1);
    await releaseModel();
    expect(heldModel()).toBeNull();
    expect(loadedLlamaModels()).toBe(before);
  });
});
