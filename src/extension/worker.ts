// The worker process: runs the engine off the extension host's thread. Started by WorkerClient
// with child_process.fork (IPC channel); one AbortController per request, cancelled by message.
import { readFileSync, rmSync } from 'node:fs';
import { loadDesign, type DesignOptions } from '../core/design/load.js';
import { DesignError } from '../core/design/errors.js';
import { getSimulator } from '../core/sim/registry.js';
import { generateTestbench } from '../core/generate/generator.js';
import { parseVerilatorCoverage } from '../core/coverage/verilatorDat.js';
import { analyzeCoverage } from '../core/coverage/analyze.js';
import { overallCoverage } from '../core/sim/ranking.js';
import { ModelError, type ModelBackend } from '../core/llm/backend.js';
import { createOpenAIBackend } from '../core/llm/openai.js';
import { createLocalBackend, type LocalDtype } from '../core/llm/local.js';
import { createLlamaBackend } from '../core/llm/llama.js';
import { resolveEngine, type LocalEngine } from '../core/llm/factory.js';
import type { BackendInfo } from '../core/llm/backend.js';
import { runAgent, refineOnce } from '../core/agent/loop.js';
import type { SimResult } from '../core/sim/result.js';
import { coverageByFile } from './coverageData.js';
import {
  roundRecord,
  type GenerateOutcome,
  type GenerateSettings,
  type IntrospectOutcome,
  type ModelCheck,
  type ModelConfig,
  type ProgressEvent,
  type RefineOutcome,
  type RoundRecord,
  type SimulateOutcome,
  type WorkerErrorInfo,
  type WorkerReply,
  type WorkerRequest,
} from './workerProtocol.js';

const controllers = new Map<number, AbortController>();

function send(m: WorkerReply): void {
  process.send?.(m);
}

function errorInfo(e: unknown, signal?: AbortSignal): WorkerErrorInfo {
  if (signal?.aborted) return { message: 'cancelled', kind: 'cancelled' };
  if (e instanceof DesignError) return { message: e.message, kind: e.kind, candidates: e.candidates, diagnostics: e.diagnostics };
  if (e instanceof ModelError) return { message: e.message, kind: e.kind === 'cancelled' ? 'cancelled' : `model-${e.kind}` };
  return { message: e instanceof Error ? e.message : String(e) };
}

export function modelLabel(m: ModelConfig, info?: BackendInfo): string {
  if (m.source === 'openai') return `${m.model} @ ${m.baseUrl}`;
  if (m.source === 'local') {
    const engine = info?.engine ?? resolveEngine({ modelDir: m.modelDir, engine: localEngine(m) });
    return engine === 'llama' ? `local ${m.modelDir} (llama.cpp, ${info?.device ?? 'cpu'})` : `local ${m.modelDir} (ONNX ${m.dtype})`;
  }
  return 'model-free generator';
}

function localEngine(m: Extract<ModelConfig, { source: 'local' }>): LocalEngine {
  return m.engine === 'llama' || m.engine === 'onnx' ? m.engine : 'auto';
}

/** The loaded local model stays loaded between requests (loading a 4B model takes long, and the
 * engine keeps the KV state of the last prompt for the next); choosing another model releases it
 * first, so two never sit in memory together. */
let held: { key: string; backend: ModelBackend } | null = null;
let onHeldProgress: ((s: string) => void) | undefined;

export async function releaseModel(): Promise<void> {
  const h = held;
  held = null;
  await h?.backend.dispose().catch(() => undefined);
}

export async function makeBackend(m: ModelConfig, onProgress?: (s: string) => void): Promise<ModelBackend | null> {
  if (m.source === 'openai')
    return createOpenAIBackend({ baseUrl: m.baseUrl, model: m.model, apiKey: m.apiKey, timeoutMs: m.timeoutMs, maxRetries: m.maxRetries });
  if (m.source !== 'local') return null;
  onHeldProgress = onProgress;
  const key = JSON.stringify(m);
  if (held?.key === key) return shared(held.backend);
  await releaseModel();
  const progress = (s: string): void => onHeldProgress?.(s);
  const engine = resolveEngine({ modelDir: m.modelDir, engine: localEngine(m) });
  const backend =
    engine === 'llama'
      ? createLlamaBackend({ modelPath: m.modelDir, onMessage: progress })
      : createLocalBackend({
          modelDir: m.modelDir,
          dtype: (['fp32', 'q4', 'q4f16'].includes(m.dtype) ? m.dtype : 'q4') as LocalDtype,
          allowDownload: m.allowDownload,
          onProgress: (p) =>
            progress(`loading model: ${p.file} ${p.status}${p.total ? ` ${Math.round((100 * (p.loaded ?? 0)) / p.total)}%` : ''}`),
        });
  held = { key, backend };
  return shared(backend);
}

/** The held backend for one request: its dispose() leaves the model loaded (releaseModel frees it);
 * a load that failed is dropped so the next request tries again. */
function shared(b: ModelBackend): ModelBackend {
  return {
    parallelism: b.parallelism,
    info: () =>
      b.info().catch(async (e: unknown) => {
        if (held?.backend === b) await releaseModel();
        throw e;
      }),
    countTokens: (m) => b.countTokens(m),
    promptIds: b.promptIds ? (m) => b.promptIds!(m) : undefined,
    complete: (r) => b.complete(r),
    dispose: async () => {
      if (held?.backend !== b) await b.dispose().catch(() => undefined);
    },
  };
}

async function introspectReq(design: DesignOptions, signal: AbortSignal): Promise<IntrospectOutcome> {
  const { info } = await loadDesign(design, signal);
  return { top: info.top, topCandidates: info.topCandidates, files: info.files };
}

async function generate(
  design: DesignOptions,
  model: ModelConfig,
  s: GenerateSettings,
  signal: AbortSignal,
  progress: (e: ProgressEvent) => void,
): Promise<GenerateOutcome> {
  progress({ kind: 'status', message: 'reading the design' });
  const loaded = await loadDesign(design, signal);
  const simulator = getSimulator(s.simulator);
  const simInfo = await simulator.info();
  const simLabel = `${simInfo.name} ${simInfo.version}`;
  const backend = await makeBackend(model, (message) => progress({ kind: 'status', message }));
  if (!backend) {
    const total = s.rounds;
    let bestCov: number | null = null;
    const rounds: RoundRecord[] = [];
    progress({ kind: 'round-start', sample: 0, round: 0, rounds: total });
    const r = await generateTestbench(simulator, loaded.design, loaded.info, {
      rounds: total,
      target: s.target,
      instance: s.instance,
      seed: s.seed,
      limits: s.limits,
      signal,
      onRound: (g) => {
        const rec = roundRecord(0, g.round, g.testbench, g.result, g.notes);
        rounds.push(rec);
        const c = overallCoverage(g.result);
        if (c !== null && (bestCov === null || c > bestCov)) bestCov = c;
        progress({ kind: 'round-end', record: rec, bestCoverage: bestCov, rounds: total });
        if (g.round + 1 < total) progress({ kind: 'round-start', sample: 0, round: g.round + 1, rounds: total });
      },
    });
    return {
      top: loaded.info.top,
      tbName: r.tbName,
      design: loaded.design,
      rounds,
      best: r.rounds.indexOf(r.best),
      model: modelLabel(model),
      simulator: simLabel,
      cancelled: signal.aborted,
    };
  }
  try {
    const rounds: RoundRecord[] = [];
    const info = await backend.info();
    const label = modelLabel(model, info);
    progress({ kind: 'model', label });
    let warmStart: Parameters<typeof runAgent>[0]['warmStart'];
    if (s.warmStart) {
      progress({ kind: 'status', message: 'warm start: running the built-in generator; the model refines its best testbench' });
      const g = await generateTestbench(simulator, loaded.design, loaded.info, {
        rounds: s.rounds,
        target: s.target,
        instance: s.instance,
        seed: s.seed,
        limits: s.limits,
        signal,
      });
      warmStart = { testbench: g.best.testbench, filename: g.tbName, result: g.best.result };
    }
    const run = await runAgent({
      backend,
      simulator,
      design: loaded.design,
      info: loaded.info,
      instance: s.instance,
      rounds: s.rounds,
      samples: s.samples,
      target: s.target,
      history: s.history,
      sampling: { temperature: s.temperature, topP: s.topP, maxNewTokens: s.maxNewTokens, seed: s.seed },
      limits: s.limits,
      signal,
      warmStart,
      onEvent: (e) => {
        if (e.type === 'round-start') progress({ kind: 'round-start', sample: e.sample, round: e.round, rounds: e.rounds });
        else if (e.type === 'text') progress({ kind: 'text', piece: e.piece });
        else if (e.type === 'sim-start') progress({ kind: 'status', message: `simulating round ${e.round + 1}` });
        else if (e.type === 'round-end') {
          const rec = roundRecord(
            e.sample,
            e.round,
            e.entry.testbench,
            e.entry.result,
            e.entry.parsed.status === 'unparsable' ? [e.entry.parsed.reason] : [],
          );
          rounds.push(rec);
          progress({ kind: 'round-end', record: rec, bestCoverage: e.bestCoverage, rounds: s.rounds + 1 });
        }
      },
    });
    // Rounds from the run record (complete even when events were missed), in sample/round order.
    const all: RoundRecord[] = [];
    for (const sample of run.samples)
      for (const r of sample.rounds)
        all.push(roundRecord(r.sample, r.round, r.testbench, r.result, r.parsed.status === 'unparsable' ? [r.parsed.reason] : []));
    const final = all.length ? all : rounds;
    const best = run.best ? final.findIndex((r) => r.sample === run.best!.sample && r.round === run.best!.round) : -1;
    return {
      top: run.top,
      tbName: `tb_${run.top}.sv`,
      design: loaded.design,
      rounds: final,
      best: best >= 0 ? best : null,
      model: label,
      simulator: simLabel,
      cancelled: run.cancelled || signal.aborted,
    };
  } finally {
    await backend.dispose().catch(() => undefined);
  }
}

async function simulate(
  design: DesignOptions,
  testbench: { name: string; content: string },
  s: GenerateSettings,
  signal: AbortSignal,
): Promise<SimulateOutcome> {
  const loaded = await loadDesign(design, signal);
  const simulator = getSimulator(s.simulator);
  const result = await simulator.simulate({
    design: loaded.design,
    top: loaded.info.top,
    testbench,
    limits: s.limits,
    seed: s.seed,
    keepRunDir: true,
    signal,
  });
  let files: SimulateOutcome['files'] = [];
  try {
    if (result.coverageFile) {
      const dutFiles = new Set(loaded.info.files.concat(loaded.design.files));
      const cov = analyzeCoverage(parseVerilatorCoverage(readFileSync(result.coverageFile, 'utf8')), {
        isDutFile: (f) => dutFiles.has(f) || [...dutFiles].some((d) => d.endsWith('/' + f)),
        top: loaded.info.top,
      });
      files = coverageByFile(cov.points);
    }
  } finally {
    if (result.protection.scratchDir) rmSync(result.protection.scratchDir, { recursive: true, force: true });
  }
  result.coverageFile = undefined;
  result.log = result.log.slice(-20_000);
  return { result, files };
}

async function refine(
  req: Extract<WorkerRequest, { type: 'refine' }>,
  signal: AbortSignal,
  progress: (e: ProgressEvent) => void,
): Promise<RefineOutcome> {
  const loaded = await loadDesign(req.design, signal);
  const simulator = getSimulator(req.settings.simulator);
  const backend = await makeBackend(req.model, (message) => progress({ kind: 'status', message }));
  if (!backend) {
    // Model-free: the generator's coverage-directed rounds, starting from the design again.
    progress({ kind: 'status', message: 'model-free refinement: coverage-directed generator rounds' });
    const r = await generateTestbench(simulator, loaded.design, loaded.info, {
      rounds: Math.max(2, req.settings.rounds),
      target: req.settings.target,
      instance: req.settings.instance,
      seed: req.settings.seed + 1,
      limits: req.settings.limits,
      signal,
    });
    return {
      testbench: r.best.testbench,
      result: r.best.result,
      record: roundRecord(0, r.best.round, r.best.testbench, r.best.result, r.best.notes),
      model: modelLabel(req.model),
    };
  }
  try {
    let last: SimResult | null = req.last;
    if (!last && !req.log) {
      progress({ kind: 'status', message: 'simulating the current testbench' });
      last = await simulator.simulate({
        design: loaded.design,
        top: loaded.info.top,
        testbench: req.testbench,
        limits: req.settings.limits,
        signal,
      });
    }
    progress({ kind: 'status', message: 'asking the model for a revision' });
    const out = await refineOnce({
      backend,
      design: loaded.design,
      top: loaded.info.top,
      testbench: req.testbench,
      feedback: last ? { result: last } : { log: req.log ?? '' },
      instance: req.settings.instance,
      sampling: {
        temperature: req.settings.temperature,
        topP: req.settings.topP,
        maxNewTokens: req.settings.maxNewTokens,
        seed: req.settings.seed,
      },
      signal,
      onText: (piece) => progress({ kind: 'text', piece }),
    });
    if (!out.testbench)
      throw new Error(`the model's reply held no testbench${out.parsed.status === 'unparsable' ? `: ${out.parsed.reason}` : ''}`);
    progress({ kind: 'status', message: 'simulating the revision' });
    const result = await simulator.simulate({
      design: loaded.design,
      top: loaded.info.top,
      testbench: { name: out.filename ?? req.testbench.name, content: out.testbench },
      limits: req.settings.limits,
      signal,
    });
    return {
      testbench: out.testbench,
      result,
      record: roundRecord(0, 1, out.testbench, result),
      model: modelLabel(req.model, await backend.info()),
    };
  } finally {
    await backend.dispose().catch(() => undefined);
  }
}

async function checkModel(m: ModelConfig, signal: AbortSignal): Promise<ModelCheck> {
  if (m.source === 'none') return { ok: true, message: 'model-free generator: nothing to check' };
  if (m.source === 'openai') {
    const base = m.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '') + '/v1';
    let res: Response;
    try {
      res = await fetch(`${base}/models`, {
        headers: m.apiKey ? { authorization: `Bearer ${m.apiKey}` } : {},
        signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]),
      });
    } catch (e) {
      return { ok: false, message: `${base}/models did not answer (${(e as Error).message}); is the server running?` };
    }
    if (res.status === 401 || res.status === 403) return { ok: false, message: `${base}/models refused the API key (HTTP ${res.status})` };
    if (!res.ok) return { ok: false, message: `${base}/models answered HTTP ${res.status}` };
    const body = (await res.json().catch(() => ({}))) as { data?: Array<{ id?: string }> };
    const models = (body.data ?? []).map((d) => d.id ?? '').filter(Boolean);
    if (m.model && models.length && !models.includes(m.model))
      return { ok: false, models, message: `the server does not serve '${m.model}'; it serves: ${models.join(', ')}` };
    return { ok: true, models, message: `the server answers; models: ${models.join(', ') || '(none listed)'}` };
  }
  // Checking a model is choosing it: the one held so far is released first (makeBackend).
  const backend = await makeBackend(m);
  try {
    const info = await backend!.info();
    const engine = info.engine === 'llama' ? `llama.cpp on ${info.device ?? 'cpu'}` : 'ONNX on cpu';
    return {
      ok: true,
      message: `loaded ${info.model} with ${engine}${info.contextLength ? ` (context ${info.contextLength} tokens)` : ''}`,
    };
  } catch (e) {
    return { ok: false, message: (e as Error).message };
  } finally {
    await backend!.dispose().catch(() => undefined);
  }
}

async function handle(req: WorkerRequest): Promise<void> {
  if (req.type === 'cancel') {
    controllers.get(req.id)?.abort();
    return;
  }
  const ctl = new AbortController();
  controllers.set(req.id, ctl);
  const progress = (event: ProgressEvent): void => send({ id: req.id, type: 'progress', event });
  try {
    let result: unknown;
    switch (req.type) {
      case 'introspect':
        result = await introspectReq(req.design, ctl.signal);
        break;
      case 'generate':
        result = await generate(req.design, req.model, req.settings, ctl.signal, progress);
        break;
      case 'simulate':
        result = await simulate(req.design, req.testbench, req.settings, ctl.signal);
        break;
      case 'refine':
        result = await refine(req, ctl.signal, progress);
        break;
      case 'checkModel':
        result = await checkModel(req.model, ctl.signal);
        break;
    }
    send({ id: req.id, type: 'result', result });
  } catch (e) {
    send({ id: req.id, type: 'error', error: errorInfo(e, ctl.signal) });
  } finally {
    controllers.delete(req.id);
  }
}

if (process.send) {
  process.on('message', (m: WorkerRequest) => void handle(m));
  process.on('disconnect', () => {
    for (const c of controllers.values()) c.abort();
    void releaseModel();
    setTimeout(() => process.exit(0), 2000).unref();
  });
}
