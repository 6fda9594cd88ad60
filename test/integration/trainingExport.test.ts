// The training pipeline's export, end to end: training/tests/test_chain.py runs RL (real reward
// service), a merge, OPD and the ONNX export, and writes PyTorch's greedy continuation to
// out/training-export/expected.json. The TypeScript local backend must load that export and
// greedy-decode the same tokens. Skipped when the Python chain has not run here, unless
// CHORUS_REQUIRE_TRAINING_EXPORT=1 (scripts/test-all.sh sets it: there a missing export is a failure).
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalBackend } from '../../src/core/llm/local.js';
import type { ModelBackend } from '../../src/core/llm/backend.js';
import type { ChatMessage } from '../../src/core/agent/protocol.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const expectedPath = join(root, 'out', 'training-export', 'expected.json');
const have = existsSync(expectedPath);

interface Expected {
  model_dir: string;
  messages: ChatMessage[];
  max_new_tokens: number;
  prompt_tokens: number;
  ids: number[];
  text: string;
}

const backends: ModelBackend[] = [];
afterAll(async () => {
  for (const b of backends) await b.dispose();
});

const required = process.env.CHORUS_REQUIRE_TRAINING_EXPORT === '1';

describe.runIf(required && !have)('training export required', () => {
  it('exists', () => {
    expect.fail(`${expectedPath} is missing: the training chain (training/tests/test_chain.py) did not export a model`);
  });
});

describe.skipIf(!have)('training export (training/tests/test_chain.py output)', () => {
  it('loads in the local backend and greedy-decodes the same tokens as PyTorch', async () => {
    const exp = JSON.parse(readFileSync(expectedPath, 'utf8')) as Expected;
    const b = createLocalBackend({ modelDir: exp.model_dir, dtype: 'fp32' });
    backends.push(b);
    expect(await b.countTokens(exp.messages)).toBe(exp.prompt_tokens);
    const r = await b.complete({
      messages: exp.messages,
      sampling: { temperature: 0, topP: 1, maxNewTokens: exp.max_new_tokens, seed: 0 },
    });
    expect(r.promptTokens).toBe(exp.prompt_tokens);
    expect(r.completionTokens).toBe(exp.ids.length);
    expect(r.text).toBe(exp.text);
  }, 120_000);
});
