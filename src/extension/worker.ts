// The worker process: runs the engine off the extension host's thread. Started by WorkerClient
// with child_process.fork (IPC channel); one AbortController per request, cancelled by message.
import { loadDesign, type DesignOptions } from '../core/design/load.js';
import { DesignError } from '../core/design/errors.js';
import { getSimulator } from '../core/sim/registry.js';
import { ModelError, type BackendInfo } from '../core/llm/backend.js';
import { resolveEngine } from '../core/llm/factory.js';
import { makeBackend, releaseModel } from './heldModel.js';
import { refineOnce } from '../core/agent/loop.js';
import { runGeneration, type GenerationEvent, type GenerationRound } from '../core/run/generation.js';
import type { SimResult } from '../core/sim/result.js';
import { coverageByFile } from './coverageData.js';
import {
  roundRecord,
  type FromWorker,
  type GenerateOutcome,
  type GenerateRequest,
  type IntrospectOutcome,
  type ModelCheck,
  type ModelConfig,
  type ProgressEvent,
  type RefineOutcome,
  type RefineRequest,
  type RoundRecord,
  type SimulateOutcome,
  type SimulateRequest,
  type ToWorker,
  type WorkerErrorInfo,
  type WorkerProtocol,
  type WorkerRequestKind,
} from './workerProtocol.js';

const controllers = new Map<number, AbortController>();

function send(m: FromWorker): void {
  process.send?.(m);
}

function errorInfo(e: unknown, signal?: AbortSignal): WorkerErrorInfo {
  if (signal?.aborted) return { message: 'cancelled', kind: 'cancelled' };
  if (e instanceof DesignError) return { message: e.message, kind: e.kind, candidates: e.candidates, diagnostics: e.diagnostics };
  if (e instanceof ModelError) return { message: e.message, kind: e.kind === 'cancelled' ? 'cancelled' : `model-${e.kind}` };
  return { message: e instanceof Error ? e.message : String(e) };
}

export function modelLabel(m: ModelConfig | null, info?: BackendInfo | null): string {
  if (!m) return 'model-free generator';
  if (m.kind === 'openai') return `${m.model} @ ${m.baseUrl}`;
  const engine = info?.engine ?? resolveEngine(m);
  if (engine !== 'llama') return `local ${m.modelDir} (ONNX ${m.dtype ?? 'q4'})`;
  // the KV cache type once loaded (`auto` resolved): q8_0 and f16 differ in memory and, slightly, in output
  return `local ${m.modelDir} (llama.cpp, ${info?.device ?? 'cpu'}${info?.kvCache ? `, ${info.kvCache} KV cache` : ''})`;
}

async function introspectReq(design: DesignOptions, signal: AbortSignal): Promise<IntrospectOutcome> {
  const { info } = await loadDesign(design, signal);
  return { top: info.top, topCandidates: info.topCandidates, files: info.files };
}

const toRecord = (r: GenerationRound): RoundRecord => roundRecord(r.sample, r.round, r.testbench, r.result, r.notes);

/** The editor's generation: the one core entry point (core/run/generation.ts), its events turned
 * into the editor's progress events and its rounds into the editor's records. */
async function generate(req: GenerateRequest, signal: AbortSignal, progress: (e: ProgressEvent) => void): Promise<GenerateOutcome> {
  const { model, settings: s } = req;
  progress({ kind: 'status', message: 'reading the design' });
  const loaded = await loadDesign(req.design, signal);
  const simulator = getSimulator(s.simulator);
  const simInfo = await simulator.info();
  const backend = await makeBackend(model, (message) => progress({ kind: 'status', message }), signal);
  try {
    let label = modelLabel(model);
    const run = await runGeneration(
      {
        design: loaded.design,
        info: loaded.info,
        model,
        ...(backend ? { backend } : {}),
        simulator,
        rounds: s.rounds,
        samples: s.samples,
        target: s.target,
        seed: s.seed,
        instance: s.instance,
        history: s.history,
        sampling: { temperature: s.temperature, topP: s.topP, maxNewTokens: s.maxNewTokens },
        warmStart: model !== null && s.warmStart === true,
        limits: s.limits,
      },
      (e: GenerationEvent) => {
        if (e.type === 'progress' || e.type === 'note') progress({ kind: 'status', message: e.message });
        else if (e.type === 'model') progress({ kind: 'model', label: (label = modelLabel(model, e.info)) });
        else if (e.type === 'round-start') progress({ kind: 'round-start', sample: e.sample, round: e.round, attempts: e.attempts });
        else if (e.type === 'text') progress({ kind: 'text', piece: e.piece });
        else if (e.type === 'sim-start') progress({ kind: 'status', message: `simulating round ${e.round + 1}` });
        else if (e.type === 'warning') progress({ kind: 'status', message: `round ${e.round + 1}: ${e.message}` });
        else if (e.type === 'round-end')
          progress({ kind: 'round-end', record: toRecord(e.entry), bestCoverage: e.bestCoverage, attempts: e.attempts });
      },
      signal,
    );
    const best = run.best ? run.attempts.indexOf(run.best) : -1;
    return {
      top: run.top,
      tbName: run.tbName,
      design: loaded.design,
      rounds: run.attempts.map(toRecord),
      best: best >= 0 ? best : null,
      model: label,
      simulator: `${simInfo.name} ${simInfo.version}`,
      cancelled: run.cancelled,
    };
  } finally {
    await backend?.dispose().catch(() => undefined);
  }
}

async function simulate({ design, testbench, settings: s }: SimulateRequest, signal: AbortSignal): Promise<SimulateOutcome> {
  const loaded = await loadDesign(design, signal);
  const simulator = getSimulator(s.simulator);
  const result = await simulator.simulate({
    design: loaded.design,
    top: loaded.info.top,
    testbench,
    limits: s.limits,
    seed: s.seed,
    // The decorations show the points the figure was computed from (one idea of the DUT's files).
    wantPoints: true,
    signal,
  });
  const files: SimulateOutcome['files'] = coverageByFile(result.points ?? []);
  result.points = undefined;
  result.log = result.log.slice(-20_000);
  return { result, files };
}

async function refine(req: RefineRequest, signal: AbortSignal, progress: (e: ProgressEvent) => void): Promise<RefineOutcome> {
  const loaded = await loadDesign(req.design, signal);
  const simulator = getSimulator(req.settings.simulator);
  const backend = await makeBackend(req.model, (message) => progress({ kind: 'status', message }), signal);
  if (!backend) {
    // Model-free: a generation run with the next seed (at least one refinement round), starting
    // from the design again.
    progress({ kind: 'status', message: 'model-free refinement: coverage-directed generator rounds' });
    const r = await runGeneration(
      {
        design: loaded.design,
        info: loaded.info,
        model: null,
        simulator,
        rounds: Math.max(1, req.settings.rounds),
        target: req.settings.target,
        instance: req.settings.instance,
        seed: req.settings.seed + 1,
        limits: req.settings.limits,
      },
      undefined,
      signal,
    );
    const best = r.best!;
    return { testbench: best.testbench!, result: best.result, record: toRecord(best), model: modelLabel(req.model) };
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

async function checkModel(m: ModelConfig | null, signal: AbortSignal): Promise<ModelCheck> {
  if (!m) return { ok: true, message: 'model-free generator: nothing to check' };
  if (m.kind === 'openai') {
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
  const backend = await makeBackend(m, undefined, signal);
  try {
    const info = await backend!.info();
    const engine =
      info.engine === 'llama'
        ? `llama.cpp on ${info.device ?? 'cpu'}${info.kvCache ? `, ${info.kvCache} KV cache` : ''}`
        : `ONNX on cpu${info.onnxCache === 'present' ? ' (no in-place KV cache graph in this export: slower on long prompts; re-export with chorus-train export)' : ''}`;
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

type Progress = (e: ProgressEvent) => void;

/** One handler per request of the protocol map: adding a request without its handler does not compile. */
const handlers: {
  [K in WorkerRequestKind]: (p: WorkerProtocol[K][0], signal: AbortSignal, progress: Progress) => Promise<WorkerProtocol[K][1]>;
} = {
  introspect: (p, signal) => introspectReq(p.design, signal),
  generate: (p, signal, progress) => generate(p, signal, progress),
  simulate: (p, signal) => simulate(p, signal),
  refine: (p, signal, progress) => refine(p, signal, progress),
  checkModel: (p, signal) => checkModel(p.model, signal),
};

async function handle(req: ToWorker): Promise<void> {
  if (req.kind === 'cancel') {
    controllers.get(req.id)?.abort();
    return;
  }
  const ctl = new AbortController();
  controllers.set(req.id, ctl);
  const progress: Progress = (event) => send({ id: req.id, type: 'progress', event });
  try {
    // The union of (kind, payload) pairs cannot be narrowed through a generic index: the map above
    // is what keeps each payload with its handler.
    const handler = handlers[req.kind] as (
      p: unknown,
      signal: AbortSignal,
      progress: Progress,
    ) => Promise<WorkerProtocol[WorkerRequestKind][1]>;
    send({ id: req.id, type: 'result', result: await handler(req.payload, ctl.signal, progress) });
  } catch (e) {
    send({ id: req.id, type: 'error', error: errorInfo(e, ctl.signal) });
  } finally {
    controllers.delete(req.id);
  }
}

if (process.send) {
  process.on('message', (m: ToWorker) => void handle(m));
  process.on('disconnect', () => {
    for (const c of controllers.values()) c.abort();
    void releaseModel();
    setTimeout(() => process.exit(0), 2000).unref();
  });
}
