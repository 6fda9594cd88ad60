// CHORUS: Generate Testbench. Resolves the design and the model, runs the worker's generation with
// a cancellable progress notification, and writes the best testbench to a new file beside the
// design (or the output folder), never over an existing one.
import { DEFAULT_SCORE } from '../../core/vocabulary/defaults.js';
import * as vscode from 'vscode';
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, isAbsolute, resolve } from 'node:path';
import { generateSettings, modelConfig, outputDirectory, runFolderRoot } from '../config.js';
import { offerProjectFile, resolveDesign, type ResolvedDesign } from '../designResolver.js';
import { freeTestbenchPath, HDL_EXT } from '../project.js';
import type { RunRecord } from '../views/history.js';
import { pct, scoreName } from '../../../webview/protocol.js';
import type { GenerateOutcome, GenerateSettings, ModelConfig, ProgressEvent } from '../worker/protocol.js';
import { RunProgress } from './progress.js';
import type { Session } from './session.js';

export async function generate(s: Session, uri?: vscode.Uri, uris?: vscode.Uri[]): Promise<string | null> {
  if (!s.trusted()) return null;
  const target = s.targetUri(uri);
  if (!target) {
    void vscode.window.showWarningMessage('CHORUS: open a design file (.sv/.v) or pick one in the Explorer first');
    return null;
  }
  let resolved: ResolvedDesign;
  let model: ModelConfig | null;
  try {
    resolved = resolveDesign(target, uris?.filter((u) => HDL_EXT.test(u.fsPath)) ?? []);
    model = await modelConfig(s.ctx.secrets);
  } catch (e) {
    s.reportError('generation', e);
    return null;
  }
  s.lastProjectPath = resolved.projectPath;
  const settings = generateSettings(resolved.project);
  const ctl = s.begin();
  const modelName =
    model === null ? 'model-free generator' : model.kind === 'openai' ? `${model.model} @ ${model.baseUrl}` : `local ${model.modelDir}`;
  if (model === null)
    s.output.appendLine('[CHORUS] no model configured: using the built-in model-free generator ("CHORUS: Select Model" to configure one)');
  s.output.appendLine(
    `[CHORUS] generating a testbench for ${resolved.design.files.map((f) => basename(f)).join(', ') || resolved.design.fileLists?.join(', ')} with the ${modelName}`,
  );
  const run = s.history.start({
    kind: 'generate',
    top: resolved.project.top ?? '',
    model: modelName,
    simulator: settings.simulator,
    testbenchPath: null,
    designDir: resolved.dir,
    score: settings.score ?? DEFAULT_SCORE,
  });
  s.setStatus('busy', 'generating…');
  try {
    const outcome = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'CHORUS: generating testbench', cancellable: true },
      async (progress, token) => {
        token.onCancellationRequested(() => ctl.abort());
        let lastPct = 0;
        const shown = new RunProgress(s, run, (message, fraction) => {
          const inc = fraction !== undefined ? Math.max(0, fraction * 100 - lastPct) : undefined;
          if (fraction !== undefined) lastPct = Math.max(lastPct, fraction * 100);
          progress.report({ message, increment: inc });
        });
        const report = (ev: ProgressEvent): void => shown.on(ev);
        // The run folder, as the CLI writes it (chorus.output.runFolder; chorus-out beside the design).
        const runRoot = runFolderRoot(resolved.dir, vscode.workspace.getWorkspaceFolder(vscode.Uri.file(resolved.dir))?.uri.fsPath);
        try {
          return await s.withTop(resolved, (design) =>
            s.worker.request('generate', { design, model, settings, runRoot }, { signal: ctl.signal, onProgress: report }),
          );
        } finally {
          shown.dispose();
        }
      },
    );
    return await finishGenerate(s, outcome, resolved, run, settings);
  } catch (e) {
    s.runFailed(run, 'generation', e);
    return null;
  } finally {
    s.end(ctl);
  }
}

async function finishGenerate(
  s: Session,
  o: GenerateOutcome,
  r: ResolvedDesign,
  run: RunRecord,
  settings: GenerateSettings,
): Promise<string | null> {
  const best = o.best !== null ? o.rounds[o.best] : null;
  s.history.update(run, {
    top: o.top,
    rounds: o.rounds,
    best: o.best,
    model: o.model,
    simulator: o.simulator,
    state: o.cancelled ? 'cancelled' : best && !best.verdict.passed ? 'failed' : 'done',
    runFolder: o.runFolder,
  });
  offerProjectFile(r, o.top);
  if ((!best || !best.testbench) && o.cancelled) {
    // Nothing ran to the end: no testbench is written or opened, and nothing claims success.
    s.history.update(run, { state: 'cancelled', message: 'cancelled: no round finished, so no testbench was written' });
    s.setStatus('idle', 'cancelled');
    void vscode.window.showInformationMessage('CHORUS: generation cancelled: no round finished, so no testbench was written');
    return null;
  }
  if (!best || !best.testbench) {
    s.history.update(run, { state: 'failed', message: 'no round produced a testbench' });
    s.setStatus('error', 'no testbench');
    void vscode.window
      .showErrorMessage('CHORUS: no round produced a usable testbench (see the CHORUS output)', 'Show Output')
      .then((p) => p && s.output.show(true));
    return null;
  }
  const outDir = outputDirectory();
  const dir = outDir
    ? isAbsolute(outDir)
      ? outDir
      : resolve(vscode.workspace.getWorkspaceFolder(vscode.Uri.file(r.dir))?.uri.fsPath ?? r.dir, outDir)
    : r.dir;
  mkdirSync(dir, { recursive: true });
  // Never overwrites: the first free tb_<top>[_N].sv.
  const path = freeTestbenchPath(dir, o.top);
  writeFileSync(path, best.testbench.endsWith('\n') ? best.testbench : best.testbench + '\n');
  s.history.update(run, { testbenchPath: path, message: `best round ${best.round + 1}: ${pct(best.coverage?.overall)}` });
  s.last.set(path, { design: { ...r.design, top: o.top }, result: null });
  s.tests.item(vscode.Uri.file(path));
  const verdict = best.verdict.passed ? 'passed' : `failed: ${best.verdict.failure ?? best.status}`;
  const summary = `${basename(path)}: ${scoreName(settings.score ?? DEFAULT_SCORE)} ${pct(best.coverage?.overall)} (block ${pct(best.coverage?.block)}, toggle ${pct(best.coverage?.toggle)}) after ${o.rounds.length} round${o.rounds.length === 1 ? '' : 's'}${o.cancelled ? ' (cancelled: best so far)' : ''} — ${verdict}`;
  s.output.appendLine(`[CHORUS] wrote ${path} — ${summary}`);
  if (o.runFolder) s.output.appendLine(`[CHORUS] run folder: ${o.runFolder.dir}`);
  s.setStatus(best.verdict.passed ? 'done' : 'error', pct(best.coverage?.overall));
  // Showing the file is a courtesy: the run is done once the testbench is written, and an editor
  // closed meanwhile (showTextDocument then rejects) must not turn a finished run into a failed one.
  await Promise.resolve(
    vscode.window.showTextDocument(vscode.Uri.file(path), { viewColumn: vscode.ViewColumn.Beside, preview: false }),
  ).catch((e: unknown) => s.output.appendLine(`[CHORUS] could not show ${path}: ${(e as Error).message}`));
  const actions = ['Run Coverage', 'Dashboard', ...(o.runFolder?.report ? ['Report'] : [])];
  const toast = best.verdict.passed
    ? vscode.window.showInformationMessage(`CHORUS: ${summary}`, ...actions)
    : vscode.window.showWarningMessage(`CHORUS: ${summary}`, ...actions);
  void toast.then((p) => {
    if (p === 'Run Coverage') void vscode.commands.executeCommand('chorus.runCoverage', vscode.Uri.file(path));
    if (p === 'Dashboard') s.dashboard.show();
    if (p === 'Report') void vscode.commands.executeCommand('chorus.openRunFile', run.id, 'report');
  });
  return path;
}
