// CHORUS: Run Coverage, and the test controller's Coverage profile: simulates a testbench against
// its design in the worker, fills the Problems panel, the line decorations and VS Code's
// test-coverage view, and records the run in the history.
import { DEFAULT_SCORE } from '../../core/vocabulary/defaults.js';
import type { ScoreMode } from '../../core/vocabulary/types.js';
import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { SimResult } from '../../core/run/types.js';
import { generateSettings, runFolderRoot } from '../config.js';
import { groupDiagnostics } from '../diagnostics.js';
import { HDL_EXT } from '../project.js';
import type { FileLineCoverage } from '../views/coverageData.js';
import { pct, scoreName } from '../../../webview/protocol.js';
import { roundRecord, type ProgressEvent } from '../worker/protocol.js';
import { assertionSummary, failureReason, meetsTarget, overallCoverage } from '../../core/run/coverage.js';
import type { Session } from './session.js';
import { RunProgress } from './progress.js';

/** What a run of a testbench says, with the one meaning of "passed" (core/sim/ranking.ts): the
 * testbench simulated, broke none of the design's assertions, AND its coverage reaches the target
 * (chorus.generation.coverageTarget, percent). A run below the target is not an error, but it has not passed. */
export function verdict(
  res: SimResult,
  coverageTarget: number,
  score: ScoreMode = DEFAULT_SCORE,
): { ran: boolean; passed: boolean; summary: string } {
  const ran = res.status === 'success';
  if (!ran) return { ran, passed: false, summary: failureReason(res) };
  const c = res.coverage?.waived;
  // Coverage reached by breaking the design's own assertions is a failed run, in every score mode
  // (core/sim/assertions.ts runFailure): said beside the figure, and never "passed".
  const illegal = assertionSummary(res.dutAssertions);
  const reached = meetsTarget(overallCoverage(res), coverageTarget);
  const passed = reached && !illegal;
  const figures = `${scoreName(score)} ${pct(c?.overall)} (block ${pct(c?.block)}, toggle ${pct(c?.toggle)}, line ${pct(c?.line)}, branch ${pct(c?.branch)})`;
  const text = reached ? figures : `${figures}, below the ${pct(coverageTarget / 100)} target`;
  return { ran, passed, summary: illegal ? `${text}; failed: ${illegal}` : text };
}

async function simulateTestbench(s: Session, tb: vscode.Uri, signal: AbortSignal, onProgress?: (e: ProgressEvent) => void) {
  const doc = await vscode.workspace.openTextDocument(tb);
  const r = s.designForTestbench(tb);
  s.lastProjectPath = r.projectPath;
  onProgress?.({ kind: 'status', message: `simulating ${basename(tb.fsPath)}` });
  const settings = generateSettings(r.project);
  // The run folder, as `chorus sim` writes it (chorus.output.runFolder; chorus-out beside the design).
  const runRoot = runFolderRoot(r.dir, vscode.workspace.getWorkspaceFolder(tb)?.uri.fsPath);
  const out = await s.withTop(r, (design) =>
    s.worker.request(
      'simulate',
      { design, testbench: { name: basename(tb.fsPath), content: doc.getText() }, settings, runRoot },
      { signal, onProgress },
    ),
  );
  s.last.set(tb.fsPath, { design: r.design, result: out.result });
  // Problems panel: every file of this run, replaced as a whole.
  s.diagnostics.clear();
  for (const [file, ds] of groupDiagnostics(out.result.diagnostics, basename(tb.fsPath), tb.fsPath, r.dir))
    s.diagnostics.set(vscode.Uri.file(file), ds);
  s.decorations.set(out.files);
  return { out, r };
}

/** The test controller's run of one testbench (CoverageTests). */
export async function coverageForTest(
  s: Session,
  tb: vscode.Uri,
  token: vscode.CancellationToken,
): Promise<{ passed: boolean; message: string; files: FileLineCoverage[] } | null> {
  if (!s.trusted()) return null;
  const ctl = s.begin();
  token.onCancellationRequested(() => ctl.abort());
  try {
    const { out } = await simulateTestbench(s, tb, ctl.signal);
    const v = verdict(out.result, generateSettings().coverageTarget, generateSettings().score);
    s.tests.label(tb, `${scoreName(generateSettings().score ?? DEFAULT_SCORE)} ${pct(out.result.coverage?.waived.overall)}`);
    return { passed: v.passed, message: v.summary, files: out.files };
  } finally {
    s.end(ctl);
  }
}

export async function runCoverage(s: Session, uri?: vscode.Uri): Promise<SimResult | null> {
  if (!s.trusted()) return null;
  const tb = s.targetUri(uri);
  if (!tb || !HDL_EXT.test(tb.fsPath)) {
    void vscode.window.showWarningMessage('CHORUS: open a testbench (.sv/.v) to run its coverage');
    return null;
  }
  const ctl = s.begin();
  const t0 = Date.now();
  s.setStatus('busy', 'simulating…');
  const run = s.history.start({
    kind: 'coverage',
    top: '',
    model: '-',
    simulator: generateSettings().simulator,
    testbenchPath: tb.fsPath,
    designDir: dirname(tb.fsPath),
    score: generateSettings().score ?? DEFAULT_SCORE,
  });
  try {
    const { out } = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'CHORUS: running coverage', cancellable: true },
      async (progress, token) => {
        token.onCancellationRequested(() => ctl.abort());
        const shown = new RunProgress(s, run, (message) => progress.report({ message }));
        try {
          return await simulateTestbench(s, tb, ctl.signal, (e) => shown.on(e));
        } finally {
          shown.dispose();
        }
      },
    );
    const res = out.result;
    const doc = await vscode.workspace.openTextDocument(tb);
    const record = roundRecord(0, 0, doc.getText(), res);
    s.history.update(run, {
      top: res.dutTop,
      simulator: `${res.simulator.name} ${res.simulator.version}`,
      rounds: [record],
      best: 0,
      // One verdict everywhere: a run that broke the design's assertions failed.
      state: record.verdict.passed ? 'done' : 'failed',
      message: record.verdict.passed ? 'passed' : `failed: ${(record.verdict.failure ?? res.status).split('\n')[0]}`,
      runFolder: out.runFolder,
    });
    const { ran, passed, summary } = verdict(res, generateSettings().coverageTarget, generateSettings().score);
    s.tests.publish(tb, passed, summary, out.files, Date.now() - t0);
    s.tests.label(tb, `${scoreName(generateSettings().score ?? DEFAULT_SCORE)} ${pct(res.coverage?.waived.overall)}`);
    s.output.appendLine(`[CHORUS] ${basename(tb.fsPath)}: ${summary}`);
    if (out.runFolder) s.output.appendLine(`[CHORUS] run folder: ${out.runFolder.dir}`);
    s.setStatus(record.verdict.passed ? 'done' : 'error', ran ? pct(res.coverage?.waived.overall) : res.status);
    // Show the design file with its decorations beside the testbench; an editor that shows it
    // already is brought forward, never a second copy in another column.
    const dut = out.files[0]?.file;
    if (dut && existsSync(dut)) {
      const open = vscode.window.visibleTextEditors.find((e) => e.document.uri.fsPath === dut);
      await vscode.window.showTextDocument(vscode.Uri.file(dut), {
        viewColumn: open?.viewColumn ?? vscode.ViewColumn.Beside,
        preserveFocus: true,
        preview: !open,
      });
    }
    if (ran && record.verdict.passed) void vscode.window.showInformationMessage(`CHORUS: ${basename(tb.fsPath)}: ${summary}`);
    else if (ran) void vscode.window.showWarningMessage(`CHORUS: ${basename(tb.fsPath)}: ${summary}`);
    else
      void vscode.window
        .showErrorMessage(`CHORUS: ${basename(tb.fsPath)}: ${summary}`, 'Show Problems')
        .then((p) => p && vscode.commands.executeCommand('workbench.actions.view.problems'));
    return res;
  } catch (e) {
    s.runFailed(run, 'coverage run', e);
    return null;
  } finally {
    s.end(ctl);
  }
}
