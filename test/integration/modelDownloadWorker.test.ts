// "CHORUS: Download a Model..." through the editor's worker as the editor runs it (a bundle of
// src/extension/worker/process/main.ts forked with IPC: test/support/workerBundle.ts), against the
// local stand-in of the hub (test/support/hubServer.ts, HF_ENDPOINT): the plan with its candidates
// and sizes, a pick asked for when the repository holds several models with no default, the
// download's progress events, a cancel that leaves a partial download and no model, the hub's
// errors with their kind (auth with the token retried, checkpoint, ambiguous with its choices),
// the listing for Select Model and editor.json.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { basename } from 'node:path';
import { execa } from 'execa';
import { repoRoot } from '../helpers.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bytes, startHubServer, type HubServer } from '../support/hubServer.js';
import { startWorker, stopWorker, type BundledWorker } from '../support/workerBundle.js';
import { WorkerError } from '../../src/extension/worker/client.js';
import type { ProgressEvent } from '../../src/extension/worker/protocol.js';
import { listModels, listPartials } from '../../src/core/llm/hub/cache.js';

// Over four of the downloader's 5 MB chunks (fetched 4 at a time): a cancelled download keeps the chunks it completed.
const BIG = 24_000_000;
// The training package of this checkout (the worker finds it beside its bundle); absent in a clean
// clone before scripts/test-all.sh installs it.
const trainCli = join(repoRoot, 'training', '.venv', 'bin', 'chorus-train');
const python = join(repoRoot, 'training', '.venv', 'bin', 'python');
const haveTraining = existsSync(trainCli) && !process.env.CHORUS_TRAIN;
const gguf = bytes(BIG, 11);
let hub: HubServer;
let worker: BundledWorker | undefined;
const root = mkdtempSync(join(tmpdir(), 'chorus-worker-models-'));
const saved = { HF_ENDPOINT: process.env.HF_ENDPOINT, HF_TOKEN: process.env.HF_TOKEN };

beforeAll(async () => {
  hub = await startHubServer({
    'acme/tiny-GGUF': {
      files: [
        { path: 'tiny.Q4_K_M.gguf', content: gguf },
        { path: 'tiny.Q8_0.gguf', content: bytes(3000, 2) },
        { path: 'tokenizer_config.json', content: Buffer.from('{"chat_template":"{{ messages }}"}') },
      ],
    },
    'acme/two-GGUF': {
      files: [
        { path: 'two.Q5_K_S.gguf', content: bytes(4000, 3) },
        { path: 'two.Q6_K.gguf', content: bytes(5000, 4) },
      ],
    },
    'acme/gated-GGUF': { token: 'hf_secret', files: [{ path: 'g.Q4_K_M.gguf', content: bytes(5000, 5) }] },
    'acme/ckpt': {
      files: [
        { path: 'config.json', content: Buffer.from('{}') },
        { path: 'model.safetensors', content: bytes(3000, 6) },
      ],
    },
  });
  // The worker reads the hub's address and token from its environment, as the editor's does.
  process.env.HF_ENDPOINT = hub.url;
  delete process.env.HF_TOKEN;
  worker = await startWorker('test-worker-download');
});

afterAll(async () => {
  await stopWorker(worker);
  await hub?.close();
  for (const [k, v] of Object.entries(saved))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  rmSync(root, { recursive: true, force: true });
});

const failure = async (p: Promise<unknown>): Promise<WorkerError> => {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(WorkerError);
  return e as WorkerError;
};

describe('the worker downloads a model from the hub', () => {
  // Each test has a models folder of its own: what one downloads is no other's business.
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(root, 'models-'));
  });

  it('plans: the default quantization, every candidate with its size, nothing fetched', async () => {
    const sentBefore = new Map(hub.sent);
    const plan = await worker!.client.request('planModel', { ref: 'acme/tiny-GGUF', modelsDir: dir });
    expect(plan).toMatchObject({
      repo: 'acme/tiny-GGUF',
      chosen: 'tiny.Q4_K_M.gguf',
      decided: true,
      cached: false,
      resumes: false,
      endpoint: hub.url,
    });
    expect(plan.candidates.map((c) => [c.selector, c.kind, c.engine])).toEqual([
      ['tiny.Q4_K_M.gguf', 'gguf', 'llama'],
      ['tiny.Q8_0.gguf', 'gguf', 'llama'],
    ]);
    expect(plan.candidates[0].size).toBe(BIG + 34);
    expect(plan.dir.startsWith(dir)).toBe(true);
    expect(hub.sent).toEqual(sentBefore);
  });

  it('plans a repository with several models and no default as undecided, for the picker', async () => {
    const plan = await worker!.client.request('planModel', { ref: 'acme/two-GGUF', modelsDir: dir });
    expect(plan.decided).toBe(false);
    expect(plan.candidates.map((c) => c.selector)).toEqual(['two.Q5_K_S.gguf', 'two.Q6_K.gguf']);
    const e = await failure(worker!.client.request('planModel', { ref: 'acme/two-GGUF:Q4_0', modelsDir: dir }));
    expect(e.kind).toBe('hub-ambiguous');
    expect(e.info.candidates).toEqual(['two.Q5_K_S.gguf', 'two.Q6_K.gguf']);
  });

  it('says what a gated repository and a checkpoint need, with their kinds; the token opens the gated one', async () => {
    const auth = await failure(worker!.client.request('planModel', { ref: 'acme/gated-GGUF', modelsDir: dir }));
    expect(auth.kind).toBe('hub-auth');
    expect(auth.message).toMatch(/Set Hugging Face Token/);
    const ok = await worker!.client.request('planModel', { ref: 'acme/gated-GGUF', modelsDir: dir, token: 'hf_secret' });
    expect(ok.chosen).toBe('g.Q4_K_M.gguf');
    // A checkpoint-only repository is planned as its checkpoint, with the training package if any
    // (the editor offers the conversion, or the command to run where it is installed).
    const ck = await worker!.client.request('planModel', { ref: 'acme/ckpt', modelsDir: dir });
    expect(ck).toMatchObject({ chosen: 'checkpoint', checkpointOnly: true });
    expect(ck.trainingCli).toBe(haveTraining ? trainCli : null);
  });

  it('a conversion without the training package is refused before anything is fetched', async () => {
    // A worker whose CHORUS_TRAIN names nothing: the training package is missing, whatever this
    // machine has installed.
    const bare = await startWorker('test-worker-no-training', { CHORUS_TRAIN: join(root, 'no-chorus-train') });
    try {
      const before = hub.sent.get('model.safetensors') ?? 0;
      const e = await failure(bare.client.request('pullModel', { ref: 'acme/ckpt:checkpoint', convert: 'f16', modelsDir: dir }));
      expect(e.kind).toBe('hub-checkpoint');
      expect(e.message).toMatch(/needs the training package.*nothing was downloaded/);
      const bad = await failure(bare.client.request('pullModel', { ref: 'acme/ckpt:checkpoint', convert: 'q3', modelsDir: dir }));
      expect(bad.message).toMatch(/takes one of q4_k_m, q4_0, q8_0, f16, got 'q3'/);
      expect(hub.sent.get('model.safetensors') ?? 0).toBe(before);
      expect(listModels(dir)).toEqual([]);
      expect(listPartials(dir)).toEqual([]);
    } finally {
      await stopWorker(bare);
    }
  });

  it.skipIf(!haveTraining)(
    'a checkpoint is downloaded and converted to a GGUF with the training package',
    async () => {
      const ckpt = join(root, '..', `${basename(root)}-ckpt`);
      const models = mkdtempSync(join(tmpdir(), 'chorus-worker-convert-'));
      await execa(
        python,
        ['-m', 'chorus_train.tiny_model', '--preset', 'tiny', '--out', `${ckpt}-unused`, '--dtypes', '', '--hf-out', ckpt],
        {
          cwd: join(repoRoot, 'training'),
        },
      );
      try {
        hub.repos['acme/tiny-ckpt'] = { files: readdirSync(ckpt).map((path) => ({ path, content: readFileSync(join(ckpt, path)) })) };
        const events: ProgressEvent[] = [];
        const m = await worker!.client.request(
          'pullModel',
          { ref: 'acme/tiny-ckpt:checkpoint', convert: 'f16', modelsDir: models },
          { onProgress: (e) => events.push(e) },
        );
        expect(m).toMatchObject({ repo: 'acme/tiny-ckpt', selector: 'gguf-f16', engine: 'llama', kind: 'gguf' });
        expect(events.some((e) => e.kind === 'status' && /converting acme\/tiny-ckpt to a f16 GGUF/.test(e.message))).toBe(true);
        expect(listModels(models).map((x) => x.selector)).toEqual(['checkpoint', 'gguf-f16']);
      } finally {
        rmSync(ckpt, { recursive: true, force: true });
        rmSync(`${ckpt}-unused`, { recursive: true, force: true });
        rmSync(models, { recursive: true, force: true });
      }
    },
    180_000,
  );

  it('a cancelled download leaves a partial download and no model; the next one resumes and completes it', async () => {
    hub.faults.rate = 4_000_000;
    const events: ProgressEvent[] = [];
    const ctl = new AbortController();
    const cancelled = await failure(
      worker!.client.request(
        'pullModel',
        { ref: 'acme/tiny-GGUF:Q4_K_M', modelsDir: dir },
        {
          signal: ctl.signal,
          onProgress: (e) => {
            events.push(e);
            // The downloader writes a chunk once it is whole: cancel once one is on disk.
            if (e.kind === 'download' && listPartials(dir).some((p) => p.resumable)) ctl.abort();
          },
        },
      ),
    );
    expect(cancelled.kind).toBe('cancelled');
    expect(listModels(dir)).toEqual([]);
    expect(listPartials(dir)).toHaveLength(1);
    expect(listPartials(dir)[0].bytes).toBeGreaterThan(0);
    expect(await worker!.client.request('listModels', { modelsDir: dir })).toEqual([]);
    const plan = await worker!.client.request('planModel', { ref: 'acme/tiny-GGUF', modelsDir: dir });
    expect(plan.resumes).toBe(true);

    hub.faults.rate = undefined;
    events.length = 0;
    const m = await worker!.client.request(
      'pullModel',
      { ref: 'acme/tiny-GGUF:Q4_K_M', modelsDir: dir },
      { onProgress: (e) => events.push(e) },
    );
    expect(m).toMatchObject({ repo: 'acme/tiny-GGUF', selector: 'tiny.Q4_K_M.gguf', engine: 'llama', kind: 'gguf', size: BIG + 34 });
    expect(m.fetched).toBeLessThan(BIG + 34);
    expect(readFileSync(join(m.dir, 'tiny.Q4_K_M.gguf')).equals(gguf)).toBe(true);
    const downloads = events.filter((e) => e.kind === 'download');
    expect(downloads.some((e) => e.kind === 'download' && e.phase === 'verify')).toBe(true);
    expect(downloads.every((e) => e.kind === 'download' && e.total === BIG + 34 && e.files === 2)).toBe(true);
    expect(listPartials(dir)).toEqual([]);
    const listed = await worker!.client.request('listModels', { modelsDir: dir });
    expect(listed.map((x) => x.dir)).toEqual([m.dir]);
  });

  it('records the model the editor uses; choosing none writes nothing where no cache exists', async () => {
    const m = { dir: mkdtempSync(join(dir, 'model-')) };
    await worker!.client.request('recordEditorModel', { dir: m.dir, modelsDir: dir });
    expect(JSON.parse(readFileSync(join(dir, 'editor.json'), 'utf8'))).toEqual({ dir: m.dir });
    await worker!.client.request('recordEditorModel', { dir: null, modelsDir: dir });
    expect(JSON.parse(readFileSync(join(dir, 'editor.json'), 'utf8'))).toEqual({ dir: null });
    const none = join(dir, 'nowhere');
    await worker!.client.request('recordEditorModel', { dir: null, modelsDir: none });
    expect(existsSync(none)).toBe(false);
  });
});
