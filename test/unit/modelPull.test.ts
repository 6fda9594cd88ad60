// `chorus model pull` against a local stand-in of the hub (test/support/hubServer.ts: its file
// layout, API responses, redirects, ranges and faults): the revision pinned, the hashes checked,
// resume after a cancel, a dropped connection survived, a corrupted file refused and removed,
// gated repositories, repositories with nothing to run; then list and rm.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bytes, startHubServer, type HubRepo, type HubServer } from '../support/hubServer.js';
import { HubError, parseModelRef, planPull, pullModel } from '../../src/core/llm/hub/pull.js';
import { candidates, pick } from '../../src/core/llm/hub/candidates.js';
import { findModels, listModels, listPartials, removeModel } from '../../src/core/llm/hub/cache.js';

// Over four of the downloader's 5 MB chunks: a cancelled pull keeps the chunks it completed.
const BIG = 24_000_000;
const gguf = bytes(BIG, 7);
const repos = (): Record<string, HubRepo> => ({
  'acme/tiny-GGUF': {
    files: [
      { path: 'tiny.Q4_K_M.gguf', content: gguf },
      { path: 'tiny.Q8_0.gguf', content: bytes(3000, 2) },
      { path: 'tokenizer_config.json', content: Buffer.from('{"chat_template":"{{ messages }}"}') },
      { path: 'README.md', content: Buffer.from('# tiny') },
    ],
  },
  'acme/gated-GGUF': { token: 'hf_secret', files: [{ path: 'g.Q4_K_M.gguf', content: bytes(5000, 3) }] },
  'acme/terms-GGUF': { token: 'hf_secret', gate: 'files', files: [{ path: 't.Q4_K_M.gguf', content: bytes(5000, 4) }] },
  'acme/tiny-onnx': {
    files: [
      { path: 'config.json', content: Buffer.from('{"model_type":"qwen3"}') },
      { path: 'tokenizer.json', content: Buffer.from('{}') },
      { path: 'tokenizer_config.json', content: Buffer.from('{}') },
      { path: 'onnx/model.onnx', content: bytes(4000, 4) },
      { path: 'onnx/model_q4.onnx', content: bytes(2000, 5) },
    ],
  },
  'acme/ckpt': {
    files: [
      { path: 'config.json', content: Buffer.from('{}') },
      { path: 'model.safetensors', content: bytes(3000, 6) },
    ],
  },
  'acme/escape-GGUF': { files: [{ path: '../../escape.Q4_K_M.gguf', content: bytes(100, 8) }] },
  'acme/docs': { files: [{ path: 'README.md', content: Buffer.from('nothing') }] },
});

const roots: string[] = [];
const newRoot = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'chorus-models-'));
  roots.push(d);
  return d;
};
afterAll(() => roots.forEach((d) => rmSync(d, { recursive: true, force: true })));

let hub: HubServer;
beforeEach(async () => {
  hub = await startHubServer(repos());
});
afterEach(() => hub.close());

const catchHub = async (p: Promise<unknown>): Promise<HubError> => {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(HubError);
  return e as HubError;
};

describe('model references and choices', () => {
  it('parses the forms users type and refuses others', () => {
    expect(parseModelRef('acme/tiny-GGUF')).toEqual({ repo: 'acme/tiny-GGUF' });
    expect(parseModelRef('hf:acme/tiny-GGUF:q8_0')).toEqual({ repo: 'acme/tiny-GGUF', selector: 'q8_0' });
    expect(parseModelRef('https://huggingface.co/acme/x:tiny.Q8_0.gguf')).toEqual({ repo: 'acme/x', selector: 'tiny.Q8_0.gguf' });
    for (const bad of ['tiny', 'acme/', '../x/y', 'a/b:../../etc/passwd']) expect(() => parseModelRef(bad)).toThrow(HubError);
  });

  it('picks the default quantization, a named one, and lists choices when unclear', () => {
    const files = ['m.Q4_K_M.gguf', 'm.Q8_0.gguf', 'm-f16-00001-of-00002.gguf', 'm-f16-00002-of-00002.gguf', 'mmproj-m.gguf'].map(
      (path) => ({ path, size: 10 }),
    );
    const all = candidates(files);
    expect(all.map((c) => c.selector)).toEqual(['m-f16.gguf', 'm.Q4_K_M.gguf', 'm.Q8_0.gguf']);
    expect(all[0].files.map((f) => f.path)).toEqual(['m-f16-00001-of-00002.gguf', 'm-f16-00002-of-00002.gguf']);
    const d = { quant: 'Q4_K_M', onnxDtype: 'q4' };
    expect(pick('r', all, undefined, d).selector).toBe('m.Q4_K_M.gguf');
    expect(pick('r', all, 'q8_0', d).selector).toBe('m.Q8_0.gguf');
    expect(pick('r', all, 'F16', d).files).toHaveLength(2);
    const e = (() => {
      try {
        pick('r', all, 'Q2_K', d);
      } catch (x) {
        return x as HubError;
      }
    })();
    expect(e?.kind).toBe('ambiguous');
    expect(e?.message).toContain('m.Q8_0.gguf');
    expect(() => pick('r', candidates(files.slice(1, 2).concat({ path: 'n.Q5_K_M.gguf', size: 1 })), undefined, d)).toThrow(
      /several models/,
    );
  });
});

describe('chorus model pull (core)', () => {
  it('fetches the default quantization with its chat template, pins the commit, checks the hashes, and is idempotent', async () => {
    const root = newRoot();
    const seen: number[] = [];
    const r = await pullModel('acme/tiny-GGUF', { endpoint: hub.url, modelsDir: root, onProgress: (p) => seen.push(p.bytes) });
    expect(r.model.engine).toBe('llama');
    expect(r.model.files.map((f) => f.path)).toEqual(['tiny.Q4_K_M.gguf', 'tokenizer_config.json']);
    expect(r.model.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(r.model.revision).toBe('main');
    expect(readFileSync(join(r.model.dir, 'tiny.Q4_K_M.gguf')).equals(gguf)).toBe(true);
    expect(existsSync(join(r.model.dir, 'tiny.Q8_0.gguf'))).toBe(false);
    expect(seen.at(-1)).toBe(r.model.size);
    expect(seen.every((b, i) => i === 0 || b >= seen[i - 1])).toBe(true);
    // The listing and every download were asked at the resolved commit, never at a moving branch.
    expect(hub.requests.filter((q) => q.path.includes('/resolve/')).every((q) => q.path.includes(`/resolve/${r.model.commit}/`))).toBe(
      true,
    );
    expect(listModels(root).map((m) => m.dir)).toEqual([r.model.dir]);
    expect(listPartials(root)).toEqual([]);

    const before = hub.requests.length;
    const again = await pullModel('acme/tiny-GGUF', { endpoint: hub.url, modelsDir: root });
    expect(again.fetched).toBe(0);
    expect(hub.requests.slice(before).some((q) => q.path.includes('/resolve/') || q.path.startsWith('/cdn/'))).toBe(false);
  });

  it('resumes a cancelled download from where it stopped; the cancelled model is never listed', async () => {
    const root = newRoot();
    hub.faults.rate = 4_000_000;
    const ac = new AbortController();
    const e = await catchHub(
      pullModel('acme/tiny-GGUF', {
        endpoint: hub.url,
        modelsDir: root,
        signal: ac.signal,
        // Once a chunk is on disk (the downloader keeps whole 5 MB chunks only).
        onProgress: () => listPartials(root).some((p) => p.resumable) && ac.abort(),
      }),
    );
    expect(e.kind).toBe('cancelled');
    expect(listModels(root)).toEqual([]);
    const partial = listPartials(root);
    expect(partial).toHaveLength(1);
    expect(partial[0]).toMatchObject({ resumable: true });
    expect(partial[0].bytes).toBeGreaterThan(0);
    const plan = await planPull('acme/tiny-GGUF', { endpoint: hub.url, modelsDir: root });
    expect(plan.resumes).toBe(true);

    hub.faults.rate = undefined;
    const from = hub.requests.length;
    const r = await pullModel('acme/tiny-GGUF', { endpoint: hub.url, modelsDir: root });
    expect(readFileSync(join(r.model.dir, 'tiny.Q4_K_M.gguf')).equals(gguf)).toBe(true);
    // The resumed pull kept the chunks the cancelled one completed (at least one; the last is 3 MB): its
    // range requests cover less than the file, and the downloader counts less than the file fetched.
    const ranges = hub.requests
      .slice(from)
      .filter((q) => q.path.startsWith('/cdn/') && q.range)
      .map((q) => /bytes=(\d+)-(\d+)/.exec(q.range!)!)
      .map((m) => Number(m[2]) - Number(m[1]) + 1);
    expect(ranges.length).toBeGreaterThan(0);
    expect(ranges.reduce((a, b) => a + b, 0)).toBeLessThan(BIG - 2_000_000);
    expect(r.fetched).toBeLessThan(BIG - 2_000_000);
    expect(listPartials(root)).toEqual([]);
  });

  it('a cancel before the first chunk is kept leaves no partial download and says so', async () => {
    const root = newRoot();
    hub.faults.rate = 1_000_000;
    const ac = new AbortController();
    const e = await catchHub(
      pullModel('acme/tiny-GGUF', { endpoint: hub.url, modelsDir: root, signal: ac.signal, onProgress: (p) => p.bytes > 0 && ac.abort() }),
    );
    expect(e.kind).toBe('cancelled');
    expect(e.message).toMatch(/before any part of it was kept/);
    expect(listPartials(root)).toEqual([]);
    expect(existsSync(join(root, '.partial', 'acme', 'tiny-GGUF'))).toBe(false);
  });

  it("one download of a model at a time: a second is refused while the first runs; a dead process's lock is taken over", async () => {
    const root = newRoot();
    hub.faults.rate = 2_000_000;
    const first = pullModel('acme/tiny-GGUF', { endpoint: hub.url, modelsDir: root });
    const plan = await planPull('acme/tiny-GGUF', { endpoint: hub.url, modelsDir: root });
    while (!existsSync(join(plan.dir.replace(root, join(root, '.partial')), '.pull.lock'))) await new Promise((r) => setTimeout(r, 10));
    const second = await catchHub(pullModel('acme/tiny-GGUF', { endpoint: hub.url, modelsDir: root }));
    expect(second.kind).toBe('busy');
    expect(second.message).toMatch(
      new RegExp(`another download of acme/tiny-GGUF:tiny\\.Q4_K_M\\.gguf is under way \\(process ${process.pid}\\)`),
    );
    hub.faults.rate = undefined;
    expect((await first).model.files).toHaveLength(2);

    // A lock left by a process that is gone (killed) does not block the next pull.
    const plan8 = await planPull('acme/tiny-GGUF:Q8_0', { endpoint: hub.url, modelsDir: root });
    const part = plan8.dir.replace(root, join(root, '.partial'));
    mkdirSync(part, { recursive: true });
    writeFileSync(join(part, '.pull.lock'), '2147483646');
    expect((await pullModel('acme/tiny-GGUF:Q8_0', { endpoint: hub.url, modelsDir: root })).model.selector).toBe('tiny.Q8_0.gguf');
    expect(listPartials(root)).toEqual([]);
  });

  it('survives a connection dropped mid-file', async () => {
    const root = newRoot();
    hub.faults.dropAfter = { 'tiny.Q4_K_M.gguf': BIG / 2 };
    const r = await pullModel('acme/tiny-GGUF', { endpoint: hub.url, modelsDir: root });
    expect(readFileSync(join(r.model.dir, 'tiny.Q4_K_M.gguf')).equals(gguf)).toBe(true);
    expect([...hub.dropped]).toEqual(['tiny.Q4_K_M.gguf']);
  }, 60_000);

  it("refuses and removes a file whose SHA-256 is not the hub's; nothing is listed", async () => {
    const root = newRoot();
    hub.faults.corrupt = ['tiny.Q4_K_M.gguf'];
    const e = await catchHub(pullModel('acme/tiny-GGUF', { endpoint: hub.url, modelsDir: root }));
    expect(e.kind).toBe('hash-mismatch');
    expect(e.message).toMatch(/tiny\.Q4_K_M\.gguf .*does not match the hub \(SHA-256 [0-9a-f]{64}, the hub's is [0-9a-f]{64}\).*removed/);
    expect(listModels(root)).toEqual([]);
    const leftovers = listPartials(root).flatMap((p) => readdirSync(p.dir));
    expect(leftovers.filter((f) => f.includes('gguf'))).toEqual([]);
  });

  it('a gated repository: 401 without a token says what to set; the token is sent and never stored', async () => {
    const root = newRoot();
    const prev = process.env.HF_TOKEN;
    delete process.env.HF_TOKEN;
    try {
      const e = await catchHub(pullModel('acme/gated-GGUF', { endpoint: hub.url, modelsDir: root }));
      expect(e.kind).toBe('auth');
      expect(e.message).toMatch(/gated or private.*HF_TOKEN/);
      const bad = await catchHub(pullModel('acme/gated-GGUF', { endpoint: hub.url, modelsDir: root, token: 'hf_wrong' }));
      expect(bad.message).toMatch(/refused the token/);
      expect(bad.message).not.toContain('hf_wrong');
      // Gated on the files only (the listing is public): refused by the download, said the same way.
      const terms = await catchHub(pullModel('acme/terms-GGUF', { endpoint: hub.url, modelsDir: root }));
      expect(terms.kind).toBe('auth');
      expect(terms.message).toMatch(/acme\/terms-GGUF is gated or private \(HTTP 401\).*HF_TOKEN/);
      expect(listModels(root)).toEqual([]);
      expect(listPartials(root)).toEqual([]);
      process.env.HF_TOKEN = 'hf_secret';
      expect((await pullModel('acme/terms-GGUF', { endpoint: hub.url, modelsDir: root })).model.files).toHaveLength(1);
      const r = await pullModel('acme/gated-GGUF', { endpoint: hub.url, modelsDir: root });
      expect(r.model.files).toHaveLength(1);
      const everything = readdirSync(r.model.dir)
        .map((f) => readFileSync(join(r.model.dir, f)).toString('latin1'))
        .join('');
      expect(everything).not.toContain('hf_secret');
    } finally {
      if (prev === undefined) delete process.env.HF_TOKEN;
      else process.env.HF_TOKEN = prev;
    }
  });

  it('404s, a repository with nothing to run, and a checkpoint that needs converting get clear messages', async () => {
    const root = newRoot();
    expect((await catchHub(pullModel('acme/nope', { endpoint: hub.url, modelsDir: root }))).kind).toBe('not-found');
    expect((await catchHub(pullModel('acme/tiny-GGUF', { endpoint: hub.url, modelsDir: root, revision: 'v9' }))).message).toMatch(
      /revision v9/,
    );
    const esc = await catchHub(pullModel('acme/escape-GGUF', { endpoint: hub.url, modelsDir: root }));
    expect(esc.message).toMatch(/lists a file path that leaves the model folder/);
    expect(existsSync(join(root, '..', 'escape.Q4_K_M.gguf'))).toBe(false);
    expect((await catchHub(pullModel('acme/docs', { endpoint: hub.url, modelsDir: root }))).kind).toBe('no-usable-file');
    const ck = await catchHub(pullModel('acme/ckpt', { endpoint: hub.url, modelsDir: root }));
    expect(ck.kind).toBe('checkpoint');
    expect(ck.message).toContain('chorus model pull acme/ckpt --convert q4_k_m');
    const down = await catchHub(pullModel('acme/tiny-GGUF', { endpoint: 'http://127.0.0.1:9', modelsDir: root }));
    expect(down.kind).toBe('network');
    // The checkpoint can be fetched on purpose (then converted by chorus-train export).
    const r = await pullModel('acme/ckpt:checkpoint', { endpoint: hub.url, modelsDir: root });
    expect(r.model.engine).toBe('none');
    expect(existsSync(join(r.model.dir, 'model.safetensors'))).toBe(true);
  });

  it('an ONNX export: the default dtype with its tokenizer and config, in the layout the ONNX engine loads', async () => {
    const root = newRoot();
    const r = await pullModel('acme/tiny-onnx', { endpoint: hub.url, modelsDir: root });
    expect(r.model.engine).toBe('onnx');
    expect(r.model.selector).toBe('q4');
    for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model_q4.onnx'])
      expect(existsSync(join(r.model.dir, f))).toBe(true);
    expect(existsSync(join(r.model.dir, 'onnx/model.onnx'))).toBe(false);
    const fp32 = await pullModel('acme/tiny-onnx:fp32', { endpoint: hub.url, modelsDir: root });
    expect(statSync(join(fp32.model.dir, 'onnx/model.onnx')).size).toBe(4000);
    expect(findModels('acme/tiny-onnx', root)).toHaveLength(2);
    removeModel(findModels('acme/tiny-onnx:fp32', root)[0], root);
    expect(listModels(root).map((m) => m.selector)).toEqual(['q4']);
  });
});
