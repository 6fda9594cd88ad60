// A repository holding only a training checkpoint (safetensors: the form the LLM4Cov checkpoints
// are published in), pulled and converted in one command where the training package is present:
// `chorus model pull owner/name --convert f16` runs `chorus-train export --gguf` on the pulled
// checkpoint, and the GGUF it writes becomes a model of the cache that `chorus generate --model
// owner/name` runs on llama.cpp. The checkpoint is the tiny random-weight Qwen3 that the training
// package writes (chorus_train.tiny_model --hf-out). Needs training/.venv: skipped without it,
// unless CHORUS_REQUIRE_TRAINING_EXPORT=1 (scripts/test-all.sh, after installing it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { examples, generateWithCachedModelArgs, repoRoot, scratchDir } from '../helpers.js';
import { startHubServer, type HubServer } from '../support/hubServer.js';

const cli = join(repoRoot, 'dist', 'cli.js');
const trainCli = join(repoRoot, 'training', '.venv', 'bin', 'chorus-train');
const python = join(repoRoot, 'training', '.venv', 'bin', 'python');
const have = existsSync(trainCli);
const required = process.env.CHORUS_REQUIRE_TRAINING_EXPORT === '1';

describe.runIf(required && !have)('training package required', () => {
  it('exists', () => {
    expect.fail(`${trainCli} is missing: install the training package (scripts/test-all.sh step 3)`);
  });
});

describe.skipIf(!have)('chorus model pull --convert (training package present)', () => {
  let hub: HubServer;
  let tmp: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'chorus-convert-'));
    const ckpt = join(tmp, 'ckpt');
    await execa(
      python,
      ['-m', 'chorus_train.tiny_model', '--preset', 'tiny', '--out', join(tmp, 'unused'), '--dtypes', '', '--hf-out', ckpt],
      {
        cwd: join(repoRoot, 'training'),
      },
    );
    hub = await startHubServer({
      'chorus/tiny-qwen3-checkpoint': { files: readdirSync(ckpt).map((path) => ({ path, content: readFileSync(join(ckpt, path)) })) },
    });
    env = { HF_ENDPOINT: hub.url, CHORUS_MODELS_DIR: join(tmp, 'models'), CHORUS_TRAIN: trainCli, HF_TOKEN: '' };
  }, 120_000);
  afterAll(async () => {
    await hub?.close();
    rmSync(tmp, { recursive: true, force: true });
  });
  const chorus = (args: string[]) => execa(process.execPath, [cli, ...args], { env, reject: false });

  it('names the one command; --convert fetches, converts, and the result runs on llama.cpp', async () => {
    const plain = await chorus(['model', 'pull', 'chorus/tiny-qwen3-checkpoint']);
    expect(plain.exitCode).toBe(2);
    expect(plain.stderr).toContain('chorus model pull chorus/tiny-qwen3-checkpoint --convert q4_k_m');

    // f16: the tiny model's rows (16 wide) are too narrow for llama.cpp's 4-bit blocks.
    const c = await chorus(['model', 'pull', 'chorus/tiny-qwen3-checkpoint', '--convert', 'f16']);
    expect(c.exitCode, c.stderr).toBe(0);
    expect(c.stdout).toMatch(/^converted chorus\/tiny-qwen3-checkpoint:gguf-f16 \(GGUF, llama\.cpp, .*from the checkpoint /);
    const list = JSON.parse((await chorus(['model', 'list', '--json'])).stdout) as {
      models: { selector: string; engine: string; files: { path: string; sha256?: string }[] }[];
    };
    expect(list.models.map((m) => [m.selector, m.engine])).toEqual([
      ['checkpoint', 'none'],
      ['gguf-f16', 'llama'],
    ]);
    const gguf = list.models[1].files.find((f) => f.path.endsWith('.gguf'));
    expect(gguf?.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(list.models[1].files.map((f) => f.path)).toContain('tokenizer_config.json');

    const dir = scratchDir('chorus-convert-gen-');
    copyFileSync(join(examples, 'counter', 'counter.sv'), join(dir, 'counter.sv'));
    const g = await chorus(generateWithCachedModelArgs('chorus/tiny-qwen3-checkpoint', join(dir, 'counter.sv')));
    expect(g.exitCode, g.stderr).toBe(1); // the random model writes no testbench
    expect(JSON.parse(g.stdout).model).toMatchObject({ engine: 'llama' });

    // Converting again reuses the converted model.
    const again = await chorus(['model', 'pull', 'chorus/tiny-qwen3-checkpoint', '--convert', 'f16']);
    expect(again.exitCode).toBe(0);
    expect(JSON.parse((await chorus(['model', 'list', '--json'])).stdout).models).toHaveLength(2);
  }, 180_000);
});
