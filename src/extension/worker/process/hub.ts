// The worker's side of "CHORUS: Download a Model...": the core's hub pull (core/run/models.ts:
// planPull, pullModel, the model cache) behind the protocol's planModel, pullModel, listModels and
// recordEditorModel requests. The token comes in the request (the editor's secret store) or from
// the worker's HF_TOKEN; it is passed to the core and nowhere else.
import {
  convertCheckpoint,
  findTrainingCli,
  ggufType,
  HubError,
  listModels as listCached,
  modelsDir as defaultModelsDir,
  parseModelRef,
  planPull,
  pullModel as pullCore,
  recordEditorModel as recordCore,
  type CachedModel,
  type PullPlan,
} from '../../../core/run/models.js';
import type { HubRequest, PlanSummary, ProgressEvent, PulledModel } from '../protocol.js';

const access = (r: HubRequest, signal: AbortSignal) => ({
  ...(r.revision ? { revision: r.revision } : {}),
  ...(r.modelsDir ? { modelsDir: r.modelsDir } : {}),
  ...(r.token ? { token: r.token } : {}),
  signal,
});

function summary(p: PullPlan, decided: boolean): PlanSummary {
  return {
    repo: p.repo,
    revision: p.revision,
    commit: p.commit,
    endpoint: p.endpoint,
    candidates: p.candidates.map((c) => ({ kind: c.kind, selector: c.selector, engine: c.engine, size: c.size, files: c.files.length })),
    chosen: p.chosen.selector,
    decided,
    dir: p.dir,
    cached: p.cached,
    resumes: p.resumes,
    checkpointOnly: p.chosen.kind === 'checkpoint' && !p.candidates.some((c) => c.engine !== 'none'),
    trainingCli: findTrainingCli(),
  };
}

const pulled = (m: CachedModel, fetched?: number): PulledModel => ({
  dir: m.dir,
  repo: m.repo,
  revision: m.revision,
  commit: m.commit,
  selector: m.selector,
  engine: m.engine,
  kind: m.kind,
  size: m.size,
  ...(fetched !== undefined ? { fetched } : {}),
});

/** The plan of `ref`. A repository holding several models with no default among them, and no
 * selector given, is planned with its first runnable one (decided: false) so the editor can offer
 * the list with sizes; a selector that fits several, or none, stays the core's `ambiguous` error. */
export async function planModel(r: HubRequest, signal: AbortSignal): Promise<PlanSummary> {
  try {
    return summary(await planPull(r.ref, access(r, signal)), true);
  } catch (e) {
    const ref = parseModelRef(r.ref);
    // A checkpoint-only repository is planned as its checkpoint: the editor offers the conversion.
    if (e instanceof HubError && e.kind === 'checkpoint' && !ref.selector)
      return summary(await planPull({ repo: ref.repo, selector: 'checkpoint' }, access(r, signal)), true);
    if (!(e instanceof HubError) || e.kind !== 'ambiguous' || ref.selector || !e.choices.length) throw e;
    return summary(await planPull({ repo: ref.repo, selector: e.choices[0] }, access(r, signal)), false);
  }
}

export async function pullModel(r: HubRequest, signal: AbortSignal, progress: (e: ProgressEvent) => void): Promise<PulledModel> {
  // A conversion that cannot run is said before anything is fetched: a checkpoint is gigabytes,
  // and without the exporter it would be downloaded only to be refused.
  let cli: string | null = null;
  if (r.convert) {
    ggufType(r.convert);
    cli = findTrainingCli();
    if (!cli)
      throw new HubError(
        'checkpoint',
        'converting a checkpoint needs the training package (chorus-train on PATH, or CHORUS_TRAIN naming it); nothing was downloaded',
      );
  }
  // At most a few events a second reach the editor (the downloader reports every chunk).
  let last = 0;
  const res = await pullCore(r.ref, {
    ...access(r, signal),
    onProgress: (p) => {
      const now = Date.now();
      if (p.phase === 'download' && now - last < 250 && p.bytes < p.total) return;
      last = now;
      progress({ kind: 'download', ...p });
    },
  });
  if (!r.convert || !cli) return pulled(res.model, res.fetched);
  progress({ kind: 'status', message: `converting ${res.model.repo} to a ${r.convert} GGUF (chorus-train export)` });
  const converted = await convertCheckpoint(res.model, r.convert, { cli, signal, ...(r.modelsDir ? { modelsDir: r.modelsDir } : {}) });
  return pulled(converted, res.fetched);
}

export function listModels(r: { modelsDir?: string }): PulledModel[] {
  return listCached(r.modelsDir || defaultModelsDir()).map((m) => pulled(m));
}

export function recordEditorModel(r: { dir: string | null; modelsDir?: string }): null {
  recordCore(r.dir, r.modelsDir || defaultModelsDir());
  return null;
}
