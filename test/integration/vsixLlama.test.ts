// The packaged VSIX carries the llama.cpp engine: node-llama-cpp, what it imports at run time and its
// linux-x64 CPU build, under dist/node_modules where the worker bundle (dist/extension-worker.mjs)
// imports it from; no other platform's or GPU build. Checked on the VSIX itself: packed with
// scripts/build-extension.mjs --package, unpacked to a folder outside the repository (so nothing
// resolves from the repository's node_modules), then a script beside the worker bundle imports
// node-llama-cpp, loads its binary and a GGUF, as the worker does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureTinyGguf } from '../support/gguf.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
let tmp: string;
let ext: string;
let vsix: string;

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'chorus-vsix-'));
  vsix = join(tmp, 'chorus.vsix');
  const pack = spawnSync(process.execPath, ['scripts/build-extension.mjs', '--production', '--package'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, CHORUS_VSIX: vsix },
  });
  if (pack.status !== 0 || !existsSync(vsix)) throw new Error(`packaging the VSIX failed:\n${pack.stdout}\n${pack.stderr}`);
  const unzip = spawnSync('python3', ['-m', 'zipfile', '-e', vsix, join(tmp, 'x')], { encoding: 'utf8' });
  if (unzip.status !== 0) throw new Error(`unpacking the VSIX failed: ${unzip.stderr}`);
  ext = join(tmp, 'x', 'extension');
}, 300_000);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('VSIX: the llama.cpp engine ships', () => {
  it('holds node-llama-cpp 3.21.1 and the linux-x64 CPU build, no other platform and no llama.cpp source', () => {
    const nm = join(ext, 'dist', 'node_modules');
    expect(JSON.parse(readFileSync(join(nm, 'node-llama-cpp', 'package.json'), 'utf8')).version).toBe('3.21.1');
    expect(readdirSync(join(nm, '@node-llama-cpp'))).toEqual(['linux-x64']);
    const bins = join(nm, '@node-llama-cpp', 'linux-x64', 'bins', 'linux-x64');
    for (const f of ['llama-addon.node', 'libllama.v0.4.0.so', 'libggml-cpu-x64.so']) expect(existsSync(join(bins, f)), f).toBe(true);
    expect(existsSync(join(nm, 'node-llama-cpp', 'llama', 'gitRelease.bundle'))).toBe(false);
    // the ONNX engine's runtime is still there
    expect(existsSync(join(nm, 'onnxruntime-node', 'package.json'))).toBe(true);
    // a CUDA or Vulkan build would add 80-360 MB; the VSIX stays small
    expect(statSync(vsix).size).toBeLessThan(64 * 1024 * 1024);
  });

  it('imports node-llama-cpp from the unpacked extension and loads a GGUF with it', () => {
    const cacheDir = join(tmpdir(), 'chorus-test-models');
    mkdirSync(cacheDir, { recursive: true });
    const gguf = ensureTinyGguf(join(ROOT, 'test', 'fixtures', 'models', 'tiny-qwen3'), join(cacheDir, 'tiny-qwen3-f16-v2.gguf'));
    // A file beside the worker bundle: bare imports resolve from there as they do for the worker
    // (node -e would not do: node-llama-cpp forks a binding test with the parent's exec arguments).
    const probe = join(ext, 'dist', 'probe.mjs');
    writeFileSync(
      probe,
      [
        "const nl = await import('node-llama-cpp');",
        "const llama = await nl.getLlama({ gpu: 'auto', build: 'never', logLevel: nl.LlamaLogLevel.error });",
        'const model = await llama.loadModel({ modelPath: process.argv[2] });',
        "const ids = model.tokenize('module tb;');",
        "console.log(JSON.stringify({ resolved: import.meta.resolve('node-llama-cpp'), gpu: llama.gpu, text: model.detokenize(ids) }));",
        'await model.dispose();',
        'await llama.dispose();',
      ].join('\n'),
    );
    const r = spawnSync(process.execPath, [probe, gguf], { cwd: join(ext, 'dist'), encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as { resolved: string; gpu: unknown; text: string };
    expect(fileURLToPath(out.resolved).startsWith(join(ext, 'dist', 'node_modules', 'node-llama-cpp'))).toBe(true);
    expect(out.text).toBe('module tb;');
  });
});
