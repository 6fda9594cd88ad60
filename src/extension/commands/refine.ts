// CHORUS: Refine Testbench. Revises the open testbench from its last result here, a fresh
// simulation or a simulator log the user picks; the revision opens as a diff with Accept / Reject.
import { DEFAULT_SCORE } from '../../core/vocabulary/defaults.js';
import * as vscode from 'vscode';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { generateSettings, modelConfig, runFolderRoot } from '../config.js';
import type { ResolvedDesign } from '../designResolver.js';
import { HDL_EXT } from '../project.js';
import { pct, scoreName } from '../../../webview/protocol.js';
import { runCoverage } from './coverage.js';
import type { ModelConfig } from '../worker/protocol.js';
import { RunProgress } from './progress.js';
import type { Session } from './session.js';

export async function refine(s: Session, uri?: vscode.Uri): Promise<void> {
  if (!s.trusted()) return;
  const tb = s.targetUri(uri);
  if (!tb || !HDL_EXT.test(tb.fsPath)) {
    void vscode.window.showWarningMessage('CHORUS: open the testbench to refine');
    return;
  }
  const doc = await vscode.workspace.openTextDocument(tb);
  let last = s.last.get(tb.fsPath)?.result ?? null;
  let log: string | undefined;
  if (!last) {
    const pick = await vscode.window.showQuickPick(
      [
        { label: 'Simulate it now', description: 'run the testbench and refine from its result', id: 'sim' },
        { label: 'Use a simulator log…', description: 'a log from your own simulator run (Verilator, Xcelium/IMC)', id: 'log' },
      ],
      { title: 'CHORUS: no result of this testbench yet' },
    );
    if (!pick) return;
    if (pick.id === 'log') {
      const f = await vscode.window.showOpenDialog({
        canSelectMany: false,
        openLabel: 'Use this log',
        filters: { Logs: ['log', 'txt', 'rpt'], All: ['*'] },
      });
      if (!f?.[0]) return;
      log = readFileSync(f[0].fsPath, 'utf8');
    }
  }
  let model: ModelConfig | null;
  let r: ResolvedDesign;
  try {
    model = await modelConfig(s.ctx.secrets);
    r = s.designForTestbench(tb);
  } catch (e) {
    s.reportError('refinement', e);
    return;
  }
  const ctl = s.begin();
  const settings = generateSettings(r.project);
  const run = s.history.start({
    kind: 'refine',
    top: '',
    model: model?.kind ?? 'none',
    simulator: settings.simulator,
    testbenchPath: tb.fsPath,
    designDir: r.dir,
    score: settings.score ?? DEFAULT_SCORE,
  });
  s.setStatus('busy', 'refining…');
  let accepted = false;
  const runRoot = runFolderRoot(r.dir, vscode.workspace.getWorkspaceFolder(tb)?.uri.fsPath);
  try {
    const out = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'CHORUS: refining testbench', cancellable: true },
      async (progress, token) => {
        token.onCancellationRequested(() => ctl.abort());
        const shown = new RunProgress(s, run, (message) => progress.report({ message }));
        try {
          return await s.withTop(r, (design) =>
            s.worker.request(
              'refine',
              { design, testbench: { name: basename(tb.fsPath), content: doc.getText() }, last, log, model, settings, runRoot },
              { signal: ctl.signal, onProgress: (ev) => shown.on(ev) },
            ),
          );
        } finally {
          shown.dispose();
        }
      },
    );
    last = out.result;
    const figure = `${scoreName(settings.score ?? DEFAULT_SCORE)} ${pct(out.record.coverage?.overall)}`;
    const verdict = out.record.verdict.passed ? 'passed' : `failed: ${out.record.verdict.failure ?? out.record.status}`;
    s.history.update(run, {
      rounds: [out.record],
      best: 0,
      model: out.model,
      state: out.record.verdict.passed ? 'done' : 'failed',
      top: out.result?.dutTop ?? '',
      message: `revision: ${verdict}; ${figure}`,
      runFolder: out.runFolder,
    });
    if (out.runFolder) s.output.appendLine(`[CHORUS] run folder: ${out.runFolder.dir}`);
    s.setStatus(out.record.verdict.passed ? 'done' : 'error', `revision ${pct(out.record.coverage?.overall)}`);
    accepted = await s.revisions.review(tb, out.testbench, `revision (${verdict}; ${figure})`);
    if (accepted) s.last.set(tb.fsPath, { design: r.design, result: out.result });
    else s.setStatus('idle', 'revision rejected');
  } catch (e) {
    s.runFailed(run, 'refinement', e);
  } finally {
    s.end(ctl);
  }
  // The accepted file is measured again, so that every view (marks, Test Coverage, status bar,
  // dashboard) shows the file as it now is, and the toast confirms it.
  if (accepted) await runCoverage(s, tb);
}
