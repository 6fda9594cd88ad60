// CHORUS: Download a Model... and CHORUS: Set Hugging Face Token. A GGUF (or an ONNX export) from a
// Hugging Face Hub repository into the per-machine model cache, by the worker (the core's hub pull:
// core/run/models.ts): look the repository up, let the user pick when it holds several models,
// ask before a byte of the model is fetched, show the download (bytes, rate, time left) with
// Cancel, then offer to use it. A cancelled download leaves no model anywhere; the next download of
// the same model resumes it. The token of a gated repository lives in the secret store only.
import * as vscode from 'vscode';
import { formatBytes, kindLabel, safeText } from '../../core/run/frontEnd.js';
import { DEFAULT_GGUF_QUANT } from '../../core/vocabulary/defaults.js';
import { downloadFolder, SECRET_HUB_TOKEN } from '../config.js';
import { WorkerError } from '../worker/client.js';
import type { HubRequest, PlanSummary, PulledModel } from '../worker/protocol.js';
import {
  commandsIn,
  confirmText,
  hostOf,
  modelSettings,
  orderCandidates,
  percent,
  progressMessage,
  selectorOf,
  validateModelRef,
} from './downloadText.js';
import type { Session } from './session.js';

export const CANCELLED_MESSAGE = 'CHORUS: Download cancelled';

const settingsTarget = (): vscode.ConfigurationTarget =>
  vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;

/** Makes a model of the cache the editor's model (as Select Model does for a folder). The hashes
 * were checked when it was fetched; it loads on the next generation. */
export async function useCachedModel(s: Session, m: Pick<PulledModel, 'dir' | 'engine' | 'kind' | 'selector' | 'repo'>): Promise<void> {
  const c = vscode.workspace.getConfiguration('chorus');
  const target = settingsTarget();
  for (const [k, v] of Object.entries(modelSettings(m))) await c.update(k, v, target);
  s.status.modelInUse = null;
  await c.update('model.source', 'local', target);
  await recordEditorModel(s, m.dir);
  void vscode.window.showInformationMessage(`CHORUS: using ${m.repo} (${m.selector}) from ${m.dir}; it loads on the next generation`);
  s.setStatus('idle');
}

/** Tells the model cache which folder the editor uses (`chorus model list` marks it); best effort. */
export async function recordEditorModel(s: Session, dir: string | null): Promise<void> {
  try {
    await s.worker.request('recordEditorModel', { dir, ...(downloadFolder() ? { modelsDir: downloadFolder() } : {}) });
  } catch (e) {
    s.output.appendLine(`[CHORUS] could not record the editor's model in the model cache: ${safeText((e as Error).message)}`);
  }
}

/** A hub request with the stored token (else the worker's HF_TOKEN); a gated or private
 * repository refused without a (valid) token offers to enter one, then retries once. */
async function withToken<T>(s: Session, run: (token: string | undefined) => Promise<T>): Promise<T> {
  const token = (await s.ctx.secrets.get(SECRET_HUB_TOKEN)) || undefined;
  try {
    return await run(token);
  } catch (e) {
    if (!(e instanceof WorkerError && e.kind === 'hub-auth')) throw e;
    const p = await vscode.window.showErrorMessage(`CHORUS: ${safeText(e.message)}`, 'Enter Token');
    if (p !== 'Enter Token') throw new WorkerError({ message: 'cancelled', kind: 'cancelled' });
    const entered = await askToken();
    if (!entered) throw new WorkerError({ message: 'cancelled', kind: 'cancelled' });
    await s.ctx.secrets.store(SECRET_HUB_TOKEN, entered);
    return await run(entered);
  }
}

function askToken(): Thenable<string | undefined> {
  return vscode.window.showInputBox({
    title: 'CHORUS: Hugging Face token (kept in the secret store; empty clears it)',
    prompt: 'A read token of an account with access to the repository (huggingface.co/settings/tokens)',
    password: true,
    ignoreFocusOut: true,
    placeHolder: 'hf_…',
  });
}

export async function setHubToken(s: Session): Promise<void> {
  const t = await askToken();
  if (t === undefined) return;
  if (t.trim()) {
    await s.ctx.secrets.store(SECRET_HUB_TOKEN, t.trim());
    void vscode.window.showInformationMessage('CHORUS: Hugging Face token stored in the secret store');
  } else {
    await s.ctx.secrets.delete(SECRET_HUB_TOKEN);
    void vscode.window.showInformationMessage('CHORUS: Hugging Face token cleared');
  }
}

/** A request to the worker behind a cancellable notification. */
async function lookUp(s: Session, title: string, req: Omit<HubRequest, 'token'>): Promise<PlanSummary> {
  return await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (_p, cancel) => {
    const ctl = new AbortController();
    cancel.onCancellationRequested(() => ctl.abort());
    return withToken(s, (token) => s.worker.request('planModel', { ...req, ...(token ? { token } : {}) }, { signal: ctl.signal }));
  });
}

export async function downloadModel(s: Session, given?: string): Promise<PulledModel | null> {
  const ref = (
    given ??
    (await vscode.window.showInputBox({
      title: 'CHORUS: Download a Model from Hugging Face',
      prompt: 'A repository with a GGUF (llama.cpp) or an ONNX export; you confirm before anything is downloaded',
      placeHolder: 'owner/name or owner/name:Q4_K_M',
      validateInput: validateModelRef,
      ignoreFocusOut: true,
    }))
  )?.trim();
  if (!ref) return null;
  const modelsDir = downloadFolder();
  const base = { ...(modelsDir ? { modelsDir } : {}) };
  try {
    let plan: PlanSummary;
    try {
      plan = await lookUp(s, `CHORUS: looking up ${ref} on the hub`, { ref, ...base });
    } catch (e) {
      // A selector that fits several files, or none: the repository's choices to pick from.
      if (!(e instanceof WorkerError && e.kind === 'hub-ambiguous' && e.info.candidates?.length)) throw e;
      const repo = ref.slice(0, ref.length - (selectorOf(ref)?.length ?? 0)).replace(/:\s*$/, '');
      const choice = await vscode.window.showQuickPick(e.info.candidates, {
        title: `CHORUS: ${safeText(e.message)}`,
        placeHolder: 'the model to download',
        ignoreFocusOut: true,
      });
      if (!choice) return null;
      plan = await lookUp(s, `CHORUS: looking up ${choice}`, { ref: `${repo}:${choice}`, ...base });
    }
    let selector = plan.chosen;
    const runnable = orderCandidates(plan).filter((c) => c.engine !== 'none');
    if (!selectorOf(ref) && runnable.length > 1) {
      const pick = await vscode.window.showQuickPick(
        runnable.map((c) => ({
          label: c.selector,
          description: `${kindLabel(c.kind)}, ${formatBytes(c.size)}${c.selector === plan.chosen && plan.decided ? ' (default)' : ''}`,
          selector: c.selector,
        })),
        { title: `CHORUS: ${plan.repo} holds several models — which one?`, ignoreFocusOut: true },
      );
      if (!pick) return null;
      selector = pick.selector;
      if (selector !== plan.chosen)
        plan = await lookUp(s, `CHORUS: looking up ${plan.repo}:${selector}`, { ref: `${plan.repo}:${selector}`, ...base });
    }
    if (plan.checkpointOnly) return await offerConversion(s, plan, base);
    const exact = `${plan.repo}:${selector}`;
    if (plan.cached) {
      const m: PulledModel = {
        dir: plan.dir,
        repo: plan.repo,
        revision: plan.revision,
        commit: plan.commit,
        selector,
        ...kindOf(plan, selector),
        size: sizeOf(plan, selector),
      };
      const p = await vscode.window.showInformationMessage(
        `CHORUS: ${plan.repo} (${selector}) is already in the model cache: ${plan.dir}`,
        'Use This Model',
      );
      if (p === 'Use This Model') await useCachedModel(s, m);
      return m;
    }
    // Offline by default: not a byte of the model before this answer.
    const yes = await vscode.window.showInformationMessage(
      confirmText(plan, selector),
      {
        modal: true,
        detail: `Into ${plan.dir}. Every file is checked against the hub's SHA-256; a cancelled download is resumed the next time.`,
      },
      'Download',
    );
    if (yes !== 'Download') return null;
    s.output.appendLine(
      `[CHORUS] downloading ${exact} (commit ${plan.commit.slice(0, 12)}) from ${hostOf(plan.endpoint)} into ${plan.dir}`,
    );
    const model = await fetchWithProgress(s, `CHORUS: downloading ${exact}`, { ref: exact, ...base });
    s.output.appendLine(`[CHORUS] downloaded ${exact} to ${model.dir} (${formatBytes(model.fetched ?? 0)} fetched)`);
    void vscode.window
      .showInformationMessage(`CHORUS: Downloaded ${model.repo} (${model.selector}) to ${model.dir}`, 'Use This Model')
      .then((p) => {
        if (p === 'Use This Model') void useCachedModel(s, model);
      });
    return model;
  } catch (e) {
    report(s, e);
    return null;
  }
}

/** The pull request in the worker behind a cancellable notification with the download's progress
 * (and the conversion's status line when it converts a checkpoint). */
function fetchWithProgress(s: Session, title: string, req: Omit<HubRequest, 'token'>): Thenable<PulledModel> {
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (progress, cancel) => {
    const ctl = new AbortController();
    cancel.onCancellationRequested(() => ctl.abort());
    let done = 0;
    return withToken(s, (token) =>
      s.worker.request(
        'pullModel',
        { ...req, ...(token ? { token } : {}) },
        {
          signal: ctl.signal,
          onProgress: (ev) => {
            if (ev.kind === 'status') return progress.report({ message: safeText(ev.message) });
            if (ev.kind !== 'download') return;
            const now = percent(ev);
            progress.report({ message: safeText(progressMessage(ev)), increment: Math.max(0, now - done) });
            done = Math.max(done, now);
          },
        },
      ),
    );
  });
}

/** A repository holding only a training checkpoint: where the training package is installed,
 * download it and convert it to a GGUF (the one command the CLI runs: chorus model pull --convert);
 * elsewhere, the command to run where it is. */
async function offerConversion(s: Session, plan: PlanSummary, base: { modelsDir?: string }): Promise<PulledModel | null> {
  const cmd = `chorus model pull ${plan.repo} --convert ${CONVERT_TYPE}`;
  if (!plan.trainingCli) {
    const p = await vscode.window.showErrorMessage(
      `CHORUS: ${plan.repo} is a training checkpoint (safetensors), which the engines do not run as it is. Convert it where the training package (chorus-train) is installed: ${cmd}`,
      'Copy Command',
    );
    if (p) await vscode.env.clipboard.writeText(cmd);
    return null;
  }
  const yes = await vscode.window.showInformationMessage(
    `${plan.repo} is a training checkpoint (${formatBytes(sizeOf(plan, 'checkpoint'))}). Download it from ${hostOf(plan.endpoint)} and convert it to a ${CONVERT_TYPE.toUpperCase()} GGUF?`,
    { modal: true, detail: `The checkpoint goes into ${plan.dir}; the training package converts it (${plan.trainingCli} export --gguf).` },
    'Download and Convert',
  );
  if (yes !== 'Download and Convert') return null;
  const model = await fetchWithProgress(s, `CHORUS: downloading and converting ${plan.repo}`, {
    ref: `${plan.repo}:checkpoint`,
    convert: CONVERT_TYPE,
    ...base,
  });
  s.output.appendLine(`[CHORUS] converted ${plan.repo} to ${model.dir}`);
  const p = await vscode.window.showInformationMessage(`CHORUS: Converted ${model.repo} to ${model.dir}`, 'Use This Model');
  if (p === 'Use This Model') await useCachedModel(s, model);
  return model;
}

/** The GGUF type a checkpoint is converted to: the quantization picked by default elsewhere. */
const CONVERT_TYPE = DEFAULT_GGUF_QUANT.toLowerCase();

function kindOf(plan: PlanSummary, selector: string): Pick<PulledModel, 'engine' | 'kind'> {
  const c = plan.candidates.find((x) => x.selector === selector);
  return { engine: c?.engine ?? 'llama', kind: c?.kind ?? 'gguf' };
}

const sizeOf = (plan: PlanSummary, selector: string): number => plan.candidates.find((x) => x.selector === selector)?.size ?? 0;

function report(s: Session, e: unknown): void {
  if (e instanceof WorkerError && e.kind === 'cancelled') {
    // The core says whether anything was kept for the next download to resume.
    const said = e.message.startsWith('The download of') ? `CHORUS: ${safeText(e.message)}` : CANCELLED_MESSAGE;
    s.output.appendLine(`[CHORUS] ${said.replace(/^CHORUS: /, '')}`);
    void vscode.window.showInformationMessage(said);
    return;
  }
  // The hub's messages say what to do (a token, a name, the export command of a checkpoint).
  const msg = safeText(e instanceof Error ? e.message : String(e));
  s.output.appendLine(`[CHORUS] model download failed: ${msg}`);
  const commands = commandsIn(msg);
  if (e instanceof WorkerError && e.kind === 'hub-checkpoint' && commands.length) {
    void vscode.window.showErrorMessage(`CHORUS: ${msg}`, commands.length > 1 ? 'Copy Commands' : 'Copy Command').then((p) => {
      if (p) void vscode.env.clipboard.writeText(commands.join('\n'));
    });
    return;
  }
  if (e instanceof WorkerError && e.kind === 'hub-auth') {
    void vscode.window.showErrorMessage(`CHORUS: ${msg}`, 'Set Hugging Face Token').then((p) => {
      if (p) void vscode.commands.executeCommand('chorus.setHubToken');
    });
    return;
  }
  void vscode.window.showErrorMessage(`CHORUS: ${msg}`, 'Show Output').then((p) => p && s.output.show(true));
}
