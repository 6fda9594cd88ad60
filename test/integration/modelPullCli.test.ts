// `chorus model pull | list | rm` as a user runs them, against a local stand-in of the hub
// (test/support/hubServer.ts) named by HF_ENDPOINT, into a model cache named by CHORUS_MODELS_DIR;
// then `chorus generate --model owner/name` runs what was pulled: the tiny random-weight Qwen3 as a
// GGUF (llama.cpp) and as an ONNX export. Also Ctrl-C during a pull and the resume after it.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { listPartials } from '../../src/core/llm/hub/cache.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { examples, generateWithCachedModelArgs, repoRoot, scratchDir } from '../helpers.js';
import { ensureTinyGguf } from '../support/gguf.js';
import { bytes, startHubServer, type HubServer } from '../support/hubServer.js';

const cli = join(repoRoot, 'dist', 'cli.js');
const fixture = join(repoRoot, 'test', 'fixtures', 'models', 'tiny-qwen3');
const file = (p: string): Buffer => readFileSync(join(fixture, p));
let hub: HubServer;
let root: string;
let models: string;
let env: Record<string, string>;

beforeAll(async () => {
  const cacheDir = join(tmpdir(), 'chorus-test-models');
  mkdirSync(cacheDir, { recursive: true });
  const gguf = readFileSync(ensureTinyGguf(fixture, join(cacheDir, 'tiny-qwen3-f16-v2.gguf')));
  const side = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'].map((path) => ({
    path,
    content: file(path),
  }));
  hub = await startHubServer({
    'chorus/tiny-qwen3-GGUF': {
      files: [
        { path: 'tiny-qwen3.F16.gguf', content: gguf },
        { path: 'tokenizer_config.json', content: file('tokenizer_config.json') },
        { path: 'README.md', content: Buffer.from('# tiny') },
      ],
    },
    'chorus/tiny-qwen3-onnx': {
      files: [
        ...side,
        ...['onnx/model.onnx', 'onnx/model.onnx_data', 'onnx/model_q4.onnx', 'onnx/embed_tokens_q4.onnx_data'].map((path) => ({
          path,
          content: file(path),
        })),
      ],
    },
    'acme/big-GGUF': { files: [{ path: 'big.Q4_K_M.gguf', content: bytes(24_000_000, 9) }] },
  });
  root = mkdtempSync(join(tmpdir(), 'chorus-models-cli-'));
  models = root;
  env = { HF_ENDPOINT: hub.url, CHORUS_MODELS_DIR: models, HF_TOKEN: '' };
}, 120_000);
afterAll(async () => {
  await hub?.close();
  rmSync(root, { recursive: true, force: true });
});

const chorus = (args: string[]) => execa(process.execPath, [cli, ...args], { env, reject: false });

function counter(): string {
  const dir = scratchDir('chorus-pull-cli-');
  copyFileSync(join(examples, 'counter', 'counter.sv'), join(dir, 'counter.sv'));
  return join(dir, 'counter.sv');
}

describe('chorus model', () => {
  // Each test has a model cache of its own: what one pulls is no other's business.
  beforeEach(() => {
    models = mkdtempSync(join(root, 'models-'));
    env = { ...env, CHORUS_MODELS_DIR: models };
  });

  it('pull a GGUF, list it, run it with --model owner/name on llama.cpp', async () => {
    const p = await chorus(['model', 'pull', 'chorus/tiny-qwen3-GGUF']);
    expect(p.exitCode, p.stderr).toBe(0);
    expect(p.stdout).toMatch(
      /^pulled chorus\/tiny-qwen3-GGUF:tiny-qwen3\.F16\.gguf \(GGUF, llama\.cpp, .*commit [0-9a-f]{12}, every file checked\)/,
    );
    expect(p.stderr).toMatch(/fetching tiny-qwen3\.F16\.gguf \(1\/2/);
    const l = await chorus(['model', 'list']);
    expect(l.stdout).toMatch(/chorus\/tiny-qwen3-GGUF:tiny-qwen3\.F16\.gguf\s+llama\.cpp/);
    const j = JSON.parse((await chorus(['model', 'list', '--json'])).stdout) as { models: { dir: string; files: { path: string }[] }[] };
    expect(j.models[0].files.map((f) => f.path)).toEqual(['tiny-qwen3.F16.gguf', 'tokenizer_config.json']);

    const g = await chorus(generateWithCachedModelArgs('chorus/tiny-qwen3-GGUF', counter()));
    expect(g.exitCode, g.stderr).toBe(1); // the random model writes no testbench
    expect(JSON.parse(g.stdout).model).toMatchObject({ engine: 'llama' });
  }, 120_000);

  it('pull an ONNX export (the default q4 dtype) and run it on the ONNX engine; rm removes it', async () => {
    const p = await chorus(['model', 'pull', 'chorus/tiny-qwen3-onnx']);
    expect(p.exitCode, p.stderr).toBe(0);
    expect(p.stdout).toContain('chorus/tiny-qwen3-onnx:q4 (ONNX');
    const g = await chorus(['generate', '--json', '--model', 'chorus/tiny-qwen3-onnx', '--rounds', '0', '--max-tokens', '2', counter()]);
    expect(g.exitCode, g.stderr).toBe(1);
    expect(JSON.parse(g.stdout).model).toMatchObject({ engine: 'onnx' });
    const rm = await chorus(['model', 'rm', 'chorus/tiny-qwen3-onnx', '--yes']);
    expect(rm.stdout).toMatch(/^removed chorus\/tiny-qwen3-onnx:q4/);
    expect((await chorus(['model', 'list'])).stdout).not.toContain('tiny-qwen3-onnx');
    const gone = await chorus(['generate', '--model', 'chorus/tiny-qwen3-onnx', counter()]);
    expect(gone.exitCode).toBe(2);
    expect(gone.stderr).toContain('chorus model pull chorus/tiny-qwen3-onnx');
  }, 120_000);

  it('Ctrl-C stops a pull (exit 130, a partial download, no model); the same pull resumes it', async () => {
    hub.faults.rate = 2_000_000;
    try {
      const child = execa(process.execPath, [cli, 'model', 'pull', 'acme/big-GGUF'], { env, reject: false });
      // Interrupted once the downloader has kept a chunk (it keeps whole 5 MB chunks only).
      while (!listPartials(models).some((p) => p.resumable) && child.exitCode === null) await new Promise((r) => setTimeout(r, 20));
      child.kill('SIGINT');
      const r = await child;
      expect(r.exitCode).toBe(130);
      const l = await chorus(['model', 'list']);
      expect(l.stdout).not.toMatch(/acme\/big-GGUF:/);
      expect(l.stdout).toMatch(/partial download: acme\/big-GGUF\//);
    } finally {
      hub.faults.rate = undefined;
    }
    const again = await chorus(['model', 'pull', 'acme/big-GGUF']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stderr).toContain('resuming a partial download');
    expect((await chorus(['model', 'list'])).stdout).not.toContain('partial download');
  }, 120_000);

  it('errors are one line with exit 2: no such repository, a hub that is down, a bad name', async () => {
    const nf = await chorus(['model', 'pull', 'chorus/nope']);
    expect(nf.exitCode).toBe(2);
    expect(nf.stderr.trim().split('\n')).toHaveLength(1);
    expect(nf.stderr).toMatch(/no model repository chorus\/nope at revision main \(HTTP 404\)/);
    const down = await execa(process.execPath, [cli, 'model', 'pull', 'chorus/tiny-qwen3-GGUF'], {
      env: { ...env, HF_ENDPOINT: 'http://127.0.0.1:9' },
      reject: false,
    });
    expect(down.exitCode).toBe(2);
    expect(down.stderr).toMatch(/cannot reach http:\/\/127\.0\.0\.1:9/);
    const bad = await chorus(['model', 'pull', 'justaname']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/write owner\/name/);
  });
});
