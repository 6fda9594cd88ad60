// The worker's handler map: one handler per request of the protocol (../protocol.ts), each a thin
// call of the one core entry point for it (core/run/generation.ts, core/run/refinement.ts,
// core/run/modelCheck.ts, the design loader and the simulator), its events turned into the
// editor's progress events and its rounds into the editor's records. Runs in the worker process
// only (main.ts); a local model stays loaded between requests (heldModel.ts).
import { join } from 'node:path';
import { loadDesign, type DesignOptions } from '../../../core/run/design.js';
import { getSimulator } from '../../../core/run/simulators.js';
import type { BackendInfo } from '../../../core/run/types.js';
import { resolveEngine } from '../../../core/run/models.js';
import { makeBackend } from './heldModel.js';
import { listModels, planModel, pullModel, recordEditorModel } from './hub.js';
import { runRefinement, type RefinementEvent } from '../../../core/run/refinement.js';
import { checkModel as checkCoreModel } from '../../../core/run/modelCheck.js';
import { runGeneration, type GenerationEvent, type GenerationRequest, type GenerationRound } from '../../../core/run/generation.js';
import {
  openRunFolder,
  outputProblem,
  recordingSimulator,
  runFolderFiles,
  writeRunFolder,
  type RunFolderContent,
} from '../../../core/run/runFolder.js';
import { generationFolder, generationRun, refinementFolder, simFolder } from '../../../core/run/runRecord.js';
import { cancelledRun, withVerdict } from '../../../core/run/coverage.js';
import type { RunFolderFiles, RunFolderRequest } from '../protocol.js';
import { coverageByFile } from '../../views/coverageData.js';
import {
  roundRecord,
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
  type WorkerProtocol,
  type WorkerRequestKind,
} from '../protocol.js';

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
  checkRunRoot(req);
  const loaded = await loadDesign(req.design, signal);
  const simInfo = await getSimulator(s.simulator).info();
  const recorder = recordingSimulator(s.simulator, (stage) => progress({ kind: 'stage', stage }));
  const backend = await makeBackend(model, (message) => progress({ kind: 'status', message }), signal);
  try {
    let label = modelLabel(model);
    const request: GenerationRequest = {
      design: loaded.design,
      info: loaded.info,
      model,
      ...(backend ? { backend } : {}),
      simulator: recorder.simulator,
      rounds: s.rounds,
      // The editor's rounds setting is the user's number, as --rounds is on the command line.
      allRounds: true,
      samples: s.samples,
      coverageTarget: s.coverageTarget,
      seed: s.seed,
      instance: s.instance,
      history: s.history,
      sampling: { temperature: s.temperature, topP: s.topP, maxNewTokens: s.maxNewTokens },
      warmStart: model !== null && s.warmStart === true,
      limits: s.limits,
      score: s.score,
      ...(s.formal ? { formal: s.formal } : {}),
    };
    const run = await runGeneration(
      request,
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
    // The run folder, as `chorus generate` writes it; a run cancelled before any round finished
    // leaves nothing behind.
    let runFolder: RunFolderFiles | null = null;
    if (req.runRoot && run.attempts.some((a) => a.result !== null && !cancelledRun(a.result))) {
      const dir = openRunFolder(req.runRoot, run.top);
      const g = generationRun(run, request);
      const verdict = g.best ? withVerdict(g.best.result).verdict : { passed: false, failure: 'no testbench' };
      const summary = { ...g.record, out: g.best ? join(dir, `tb_${run.top}.sv`) : null, run_dir: dir, verdict };
      const designFiles = [...loaded.design.files, ...loaded.design.libraryFiles];
      runFolder = writeFolder(dir, generationFolder(run.top, g, { designFiles, recorded: recorder.recorded, summary }));
    }
    return {
      runFolder,
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

async function simulate(req: SimulateRequest, signal: AbortSignal, progress: (e: ProgressEvent) => void): Promise<SimulateOutcome> {
  const { design, testbench, settings: s } = req;
  checkRunRoot(req);
  const loaded = await loadDesign(design, signal);
  const recorder = recordingSimulator(s.simulator, (stage) => progress({ kind: 'stage', stage }));
  const result = await recorder.simulator.simulate({
    design: loaded.design,
    top: loaded.info.top,
    testbench,
    limits: s.limits,
    seed: s.seed,
    score: s.score,
    ...(s.formal ? { formal: s.formal } : {}),
    // The decorations show the points the figure was computed from (one idea of the DUT's files).
    wantPoints: true,
    signal,
  });
  const files: SimulateOutcome['files'] = coverageByFile(result.points ?? [], result.uncovered ?? []);
  let runFolder: RunFolderFiles | null = null;
  if (req.runRoot && !signal.aborted && !cancelledRun(result)) {
    const runDir = openRunFolder(req.runRoot, loaded.info.top);
    const designFiles = [...loaded.design.files, ...loaded.design.libraryFiles];
    runFolder = writeFolder(
      runDir,
      simFolder(loaded.info.top, testbench.content, result, { designFiles, recorded: recorder.recorded(result), runDir }),
    );
  }
  result.points = undefined;
  result.log = result.log.slice(-20_000);
  return { result, files, runFolder };
}

/** The editor's refinement: the one core entry point (core/run/refinement.ts); without a model it
 * is the built-in generator seeded with the testbench, as in `chorus refine`. */
async function refine(req: RefineRequest, signal: AbortSignal, progress: (e: ProgressEvent) => void): Promise<RefineOutcome> {
  checkRunRoot(req);
  const loaded = await loadDesign(req.design, signal);
  const s = req.settings;
  const recorder = recordingSimulator(s.simulator, (stage) => progress({ kind: 'stage', stage }));
  const backend = await makeBackend(req.model, (message) => progress({ kind: 'status', message }), signal);
  try {
    const r = await runRefinement(
      {
        design: loaded.design,
        info: loaded.info,
        testbench: req.testbench,
        model: req.model,
        ...(backend ? { backend } : {}),
        simulator: recorder.simulator,
        feedback: req.last ? { result: req.last } : req.log ? { log: req.log } : undefined,
        instance: s.instance,
        sampling: { temperature: s.temperature, topP: s.topP, maxNewTokens: s.maxNewTokens, seed: s.seed },
        seed: s.seed,
        rounds: Math.max(1, s.rounds),
        coverageTarget: s.coverageTarget,
        limits: s.limits,
        score: s.score,
        ...(s.formal ? { formal: s.formal } : {}),
      },
      (e: RefinementEvent) => {
        if (e.type === 'progress' || e.type === 'note') progress({ kind: 'status', message: e.message });
        else if (e.type === 'text') progress({ kind: 'text', piece: e.piece });
      },
      signal,
    );
    let runFolder: RunFolderFiles | null = null;
    if (req.runRoot && !signal.aborted && (r.before || r.result || r.testbench)) {
      const runDir = openRunFolder(req.runRoot, loaded.info.top);
      const designFiles = [...loaded.design.files, ...loaded.design.libraryFiles];
      runFolder = writeFolder(
        runDir,
        refinementFolder(loaded.info.top, r, req.testbench, { designFiles, recorded: recorder.recorded, runDir, out: null }),
      );
    }
    if (r.refused) throw new Error(`${r.refused}${runFolder ? ` (the revision is in the run folder ${runFolder.dir})` : ''}`);
    if (r.engine === 'builtin') {
      const best = r.generation!.best!;
      return { testbench: best.testbench!, result: best.result, record: toRecord(best), model: modelLabel(req.model), runFolder };
    }
    if (!r.testbench) {
      const parsed = r.outcome?.parsed;
      throw new Error(`the model's reply held no testbench${parsed?.status === 'unparsable' ? `: ${parsed.reason}` : ''}`);
    }
    return {
      testbench: r.testbench,
      result: r.result,
      record: roundRecord(0, 1, r.testbench, r.result),
      model: modelLabel(req.model, r.model),
      runFolder,
    };
  } finally {
    await backend?.dispose().catch(() => undefined);
  }
}

/** The editor's model check and endpoint probe: the one core check (core/run/modelCheck.ts).
 * Checking a local model is choosing it: the one held so far is released first (makeBackend). */
function checkModel(m: ModelConfig | null, signal: AbortSignal): Promise<ModelCheck> {
  return checkCoreModel(m, { signal, open: async (model, sig) => (await makeBackend(model, undefined, sig))! });
}

export type Progress = (e: ProgressEvent) => void;

function writeFolder(dir: string, c: RunFolderContent): RunFolderFiles {
  return runFolderFiles(dir, c, writeRunFolder(dir, c));
}

/** A run folder that could not be written is said before the run, not after it (runFolder.ts). */
function checkRunRoot(req: RunFolderRequest): void {
  const problem = req.runRoot ? outputProblem(req.runRoot, 'dir') : undefined;
  if (problem) throw new Error(`${problem} (set chorus.runFolder to another folder)`);
}

/** One handler per request of the protocol map: adding a request without its handler does not compile. */
export const handlers: {
  [K in WorkerRequestKind]: (p: WorkerProtocol[K][0], signal: AbortSignal, progress: Progress) => Promise<WorkerProtocol[K][1]>;
} = {
  introspect: (p, signal) => introspectReq(p.design, signal),
  generate: (p, signal, progress) => generate(p, signal, progress),
  simulate: (p, signal, progress) => simulate(p, signal, progress),
  refine: (p, signal, progress) => refine(p, signal, progress),
  checkModel: (p, signal) => checkModel(p.model, signal),
  planModel: (p, signal) => planModel(p, signal),
  pullModel: (p, signal, progress) => pullModel(p, signal, progress),
  listModels: async (p) => listModels(p),
  recordEditorModel: async (p) => recordEditorModel(p),
};
