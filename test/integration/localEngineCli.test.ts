// `chorus generate --model <dir>` on the in-process engines, as a user runs it: the built CLI in a
// child process, the tiny random-weight Qwen3 (a GGUF written by test/support/gguf.ts beside the
// committed ONNX fixture). The random model writes no testbench, so the runs end with exit 1; what
// is checked is the engine choice, the per-round prefix-reuse figures in --json, and Ctrl-C.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { examples, repoRoot, scratchDir } from '../helpers.js';
import { ensureTinyGguf, shapeFromConfig, writeQwen3Gguf } from '../support/gguf.js';

const cli = join(repoRoot, 'dist', 'cli.js');
const fixture = join(repoRoot, 'test', 'fixtures', 'models', 'tiny-qwen3');
let both: string;
beforeAll(() => {
  const cacheDir = join(tmpdir(), 'chorus-test-models');
  mkdirSync(cacheDir, { recursive: true });
  const gguf = ensureTinyGguf(fixture, join(cacheDir, 'tiny-qwen3-f16-v2.gguf'));
  both = mkdtempSync(join(tmpdir(), 'chorus-both-'));
  cpSync(fixture, both, { recursive: true });
  cpSync(gguf, join(both, 'model-f16.gguf'));
}, 120_000);
afterAll(() => rmSync(both, { recursive: true, force: true }));

function counter(): string {
  const dir = scratchDir('chorus-local-cli-');
  copyFileSync(join(examples, 'counter', 'counter.sv'), join(dir, 'counter.sv'));
  return join(dir, 'counter.sv');
}

interface Round {
  round: number;
  parse_status: string;
  prompt_tokens_evaluated: number;
  prompt_tokens_reused: number;
  tokens: { prompt: number; completion: number };
}

describe('chorus generate on a local model', () => {
  for (const engine of ['llama', 'onnx'] as const) {
    it(`--engine ${engine}: the --json record gives per round the prompt tokens evaluated and reused`, async () => {
      const r = await execa(
        process.execPath,
        [
          cli,
          'generate',
          '--json',
          '--model',
          both,
          '--engine',
          engine,
          '--threads',
          '1',
          '--gpu',
          'cpu',
          '--rounds',
          '2',
          '--max-tokens',
          '8',
          '--temperature',
          '0',
          counter(),
        ],
        { reject: false },
      );
      expect(r.exitCode).toBe(1); // the random model writes no testbench
      const j = JSON.parse(r.stdout) as { model: { engine: string; device: string }; rounds: Round[] };
      expect(j.model).toMatchObject({ engine, device: 'cpu' });
      expect(j.rounds.map((x) => x.round)).toEqual([0, 1, 2]);
      const [r0, r1, r2] = j.rounds;
      expect(r0.prompt_tokens_reused).toBe(0);
      expect(r0.prompt_tokens_evaluated).toBe(r0.tokens.prompt);
      // refinement rounds start with the first turn: its KV state is reused
      for (const x of [r1, r2]) {
        expect(x.prompt_tokens_reused).toBeGreaterThan(r0.tokens.prompt - 8);
        expect(x.prompt_tokens_reused + x.prompt_tokens_evaluated).toBe(x.tokens.prompt);
      }
      expect(r.stderr).toMatch(new RegExp(`model: .*\\(local ${engine === 'llama' ? 'llama\\.cpp' : 'ONNX, q4'}\\)`));
      expect(r.stderr).toMatch(/round 2\/3: unparsable reply .*prompt \d+ evaluated \+ \d+ reused/);
    });
  }

  it('auto picks llama.cpp when the folder has a GGUF and ONNX when it has none', async () => {
    const a = await execa(
      process.execPath,
      [cli, 'generate', '--json', '--model', both, '--threads', '1', '--rounds', '0', '--max-tokens', '2', counter()],
      { reject: false },
    );
    const am = JSON.parse(a.stdout).model;
    expect(am.engine).toBe('llama');
    expect(am.kv_cache).toBe('f16'); // --kv-cache auto (the default) on the fixture's heads of 16
    // --gpu auto (the default): on a machine where no GPU build loads, a message and the CPU
    if (am.device === 'cpu') expect(a.stderr).toMatch(/note: llama\.cpp found no usable GPU build here .*running on the CPU/);
    const b = await execa(
      process.execPath,
      [cli, 'generate', '--json', '--model', fixture, '--rounds', '0', '--max-tokens', '2', counter()],
      { reject: false },
    );
    expect(JSON.parse(b.stdout).model).toMatchObject({ engine: 'onnx', onnx_cache: 'inplace' });
    const bad = await execa(process.execPath, [cli, 'generate', '--model', both, '--engine', 'vllm', counter()], { reject: false });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/--engine must be auto, llama or onnx/);
  });

  it('--kv-cache q8_0 runs the llama.cpp engine on a quantized KV cache (auto: f16 with memory to spare); another value is a usage error', async () => {
    // llama.cpp quantizes K in blocks of 32 along a head: the fixture's heads of 16 cannot, heads of 32 can
    const head32 = join(scratchDir('chorus-kv-'), 'model-f16.gguf');
    const shape = { ...shapeFromConfig(join(fixture, 'config.json')), headDim: 32 };
    writeQwen3Gguf(head32, { shape, tokenizerDir: fixture, type: 'f16', embeddingStd: 0.5 });
    const run = (model: string, kv = 'q8_0'): ReturnType<typeof execa> =>
      execa(
        process.execPath,
        [
          cli,
          'generate',
          '--json',
          '--model',
          model,
          '--engine',
          'llama',
          '--gpu',
          'cpu',
          '--threads',
          '1',
          '--kv-cache',
          kv,
          '--rounds',
          '0',
          '--max-tokens',
          '4',
          counter(),
        ],
        { reject: false },
      );
    const q = await run(head32);
    expect(q.exitCode, String(q.stderr)).toBe(1); // the random model writes no testbench
    expect(JSON.parse(String(q.stdout)).rounds[0].tokens.completion).toBeGreaterThan(0);
    expect(JSON.parse(String(q.stdout)).model.kv_cache).toBe('q8_0');
    const auto = await run(head32, 'auto');
    expect(auto.exitCode, String(auto.stderr)).toBe(1);
    expect(JSON.parse(String(auto.stdout)).model.kv_cache).toBe('f16'); // this machine has the memory
    const no = await run(both);
    expect(no.exitCode).toBe(2);
    expect(no.stderr).toMatch(/q8_0 KV cache .*head size is a multiple of 32.*--kv-cache f16/);
    const bad = await execa(process.execPath, [cli, 'generate', '--model', both, '--kv-cache', 'q4', counter()], { reject: false });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/--kv-cache must be auto, f16 or q8_0/);
  });

  for (const engine of ['llama', 'onnx'] as const) {
    it(`--engine ${engine}: Ctrl-C stops decoding and the command exits 130`, async () => {
      const p = execa(
        process.execPath,
        [
          cli,
          'generate',
          '--stream',
          '--model',
          both,
          '--engine',
          engine,
          '--threads',
          '1',
          '--rounds',
          '0',
          '--max-tokens',
          '100000',
          counter(),
        ],
        { reject: false },
      );
      let text = 0;
      let header = '';
      await new Promise<void>((ok) => {
        p.stdout!.on('data', (d: Buffer) => (header += d.toString()));
        p.stderr!.on('data', (d: Buffer) => {
          // the model's text streams to stderr once the header is out (before it: design warnings)
          if (!header.includes('design:')) return;
          if ((text += d.length) > 20) ok();
        });
        void p.then(() => ok());
      });
      const t0 = performance.now();
      p.kill('SIGINT');
      const r = await p;
      expect(r.exitCode).toBe(130);
      // decoding stops within 1 s; process teardown on a loaded machine adds to this
      expect(performance.now() - t0).toBeLessThan(10_000);
    });
  }
});
