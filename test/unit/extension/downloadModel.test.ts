// The words of "CHORUS: Download a Model..." (src/extension/commands/downloadText.ts): the
// notification's progress line, the confirmation, the picker's order, the settings of a cached
// model; the input box's check (the core's parser) and the bytes and durations shown.
import { describe, expect, it } from 'vitest';
import {
  commandsIn,
  confirmText,
  hostOf,
  modelSettings,
  orderCandidates,
  percent,
  progressMessage,
  selectorOf,
  timeLeft,
  validateModelRef,
} from '../../../src/extension/commands/downloadText.js';
import type { PlanSummary, ProgressEvent } from '../../../src/extension/worker/protocol.js';

type Download = Extract<ProgressEvent, { kind: 'download' }>;
const ev = (o: Partial<Download>): Download => ({
  kind: 'download',
  file: 'tiny.Q4_K_M.gguf',
  index: 1,
  files: 1,
  bytes: 3_100_000,
  total: 24_000_000,
  rate: 5_200_000,
  secondsLeft: 4,
  phase: 'download',
  ...o,
});

const plan = (o: Partial<PlanSummary> = {}): PlanSummary => ({
  repo: 'acme/tiny-GGUF',
  revision: 'main',
  commit: 'a'.repeat(40),
  endpoint: 'https://huggingface.co',
  candidates: [
    { kind: 'gguf', selector: 'tiny.Q8_0.gguf', engine: 'llama', size: 4_000_000_000, files: 1 },
    { kind: 'gguf', selector: 'tiny.Q4_K_M.gguf', engine: 'llama', size: 2_500_000_000, files: 2 },
    { kind: 'checkpoint', selector: 'checkpoint', engine: 'none', size: 8_000_000_000, files: 4 },
  ],
  chosen: 'tiny.Q4_K_M.gguf',
  decided: true,
  dir: '/m/acme/tiny-GGUF/aaaaaaaaaaaa-tiny.Q4_K_M.gguf',
  cached: false,
  resumes: false,
  checkpointOnly: false,
  trainingCli: null,
  ...o,
});

describe('download progress', () => {
  it('says bytes of the total, the rate and the time left', () => {
    expect(progressMessage(ev({}))).toBe('3.10 MB of 24.0 MB, 5.20 MB/s, 4s left');
    expect(progressMessage(ev({ bytes: 1_200_000_000, total: 2_500_000_000, rate: 31_000_000, secondsLeft: 95 }))).toBe(
      '1.20 GB of 2.50 GB, 31.0 MB/s, 1m35s left',
    );
  });
  it('leaves the rate and time out until measured, names the file of several, says when it checks', () => {
    expect(progressMessage(ev({ bytes: 0, rate: 0, secondsLeft: Infinity }))).toBe('0 B of 24.0 MB');
    expect(progressMessage(ev({ index: 2, files: 3, file: 'onnx/model_q4.onnx' }))).toBe(
      'file 2/3 (model_q4.onnx): 3.10 MB of 24.0 MB, 5.20 MB/s, 4s left',
    );
    expect(progressMessage(ev({ phase: 'verify' }))).toBe("checking tiny.Q4_K_M.gguf against the hub's SHA-256");
    expect(timeLeft(Infinity)).toBe('');
    expect(timeLeft(7260)).toBe('2h01m left');
  });
  it('reports percent of the whole model', () => {
    expect(percent(ev({ bytes: 6_000_000 }))).toBe(25);
    expect(percent(ev({ total: 0 }))).toBe(0);
  });
});

describe('the confirmation and the picker', () => {
  it('asks with the size and the host, and says when a download resumes', () => {
    expect(confirmText(plan(), 'tiny.Q4_K_M.gguf')).toBe('Download acme/tiny-GGUF (tiny.Q4_K_M.gguf, 2.50 GB) from huggingface.co?');
    expect(confirmText(plan({ resumes: true, endpoint: 'http://127.0.0.1:8080' }), 'tiny.Q4_K_M.gguf')).toBe(
      'Download acme/tiny-GGUF (tiny.Q4_K_M.gguf, 2.50 GB) from 127.0.0.1:8080? A cancelled download of it is resumed.',
    );
    expect(hostOf('not a url')).toBe('not a url');
  });
  it('puts the default first and the checkpoint last', () => {
    expect(orderCandidates(plan()).map((c) => c.selector)).toEqual(['tiny.Q4_K_M.gguf', 'tiny.Q8_0.gguf', 'checkpoint']);
    expect(orderCandidates(plan({ decided: false, chosen: 'tiny.Q8_0.gguf' })).map((c) => c.selector)).toEqual([
      'tiny.Q8_0.gguf',
      'tiny.Q4_K_M.gguf',
      'checkpoint',
    ]);
  });
  it('sets the folder and the engine of a cached model (and the dtype of an ONNX export)', () => {
    expect(modelSettings({ dir: '/m/a', engine: 'llama', kind: 'gguf', selector: 'x.Q4_K_M.gguf' })).toEqual({
      'model.localPath': '/m/a',
      'model.engine': 'llama',
    });
    expect(modelSettings({ dir: '/m/b', engine: 'onnx', kind: 'onnx', selector: 'q4f16' })).toEqual({
      'model.localPath': '/m/b',
      'model.engine': 'onnx',
      'model.dtype': 'q4f16',
    });
  });
});

describe('the commands a checkpoint message names (Copy Command)', () => {
  it('reads both forms of the message', () => {
    expect(
      commandsIn(
        'acme/ckpt is a training checkpoint (safetensors), which the engines do not run as it is. Fetch and convert it to a GGUF in one step: chorus model pull acme/ckpt --convert q4_k_m (this needs the training package)',
      ),
    ).toEqual(['chorus model pull acme/ckpt --convert q4_k_m']);
    expect(
      commandsIn(
        "Fetch it with 'chorus model pull acme/ckpt:checkpoint', then convert it once with 'chorus-train export <the folder it prints> <out folder> --gguf q4_k_m' and select the out folder",
      ),
    ).toEqual(['chorus model pull acme/ckpt:checkpoint', 'chorus-train export <the folder it prints> <out folder> --gguf q4_k_m']);
    expect(commandsIn('no such repository')).toEqual([]);
  });
});

describe('the input box', () => {
  it('takes owner/name with an optional selector, hub URL or hf: prefix, and says why it refuses others', () => {
    for (const [ok, sel] of [
      ['acme/tiny-GGUF', undefined],
      ['hf:acme/tiny-GGUF:q8_0', 'q8_0'],
      ['https://huggingface.co/acme/x:tiny.Q8_0.gguf', 'tiny.Q8_0.gguf'],
      ['Qwen/Qwen3-4B-GGUF:Q4_K_M', 'Q4_K_M'],
    ] as const) {
      expect(validateModelRef(ok)).toBeNull();
      expect(selectorOf(ok)).toBe(sel);
    }
    for (const bad of ['', 'tiny', 'acme/', '../x/y', 'a/b:../../etc/passwd', 'a b/c'])
      expect(validateModelRef(bad)).toMatch(/owner\/name|not a file/);
  });
});
