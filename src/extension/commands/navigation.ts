// Going from the run history (the dashboard and the CHORUS view's tree) to the text: a round's
// testbench, its diff with the round before, a source line, a file of the run's folder.
import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import { previousTestbench } from '../views/history.js';
import { showReport } from '../views/reportPanel.js';
import type { RunFile } from '../../../webview/protocol.js';
import type { Session } from './session.js';

/** CHORUS: Open Round Testbench. */
export async function openRound(s: Session, id: string, index: number): Promise<void> {
  const run = s.history.get(id);
  const tb = run?.rounds[index]?.testbench;
  if (!run || !tb) return;
  const doc = await vscode.workspace.openTextDocument(s.revisions.uri(`round${index + 1}_${run.top || 'tb'}.sv`, tb));
  await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: true });
}

/** CHORUS: Diff with Previous Round. */
export async function diffRound(s: Session, id: string, index: number): Promise<void> {
  const run = s.history.get(id);
  const cur = run?.rounds[index];
  if (!run || !cur?.testbench) return;
  const prev = previousTestbench(run, index) ?? '';
  const a = s.revisions.uri(`round${index}.sv`, prev);
  const b = s.revisions.uri(`round${index + 1}.sv`, cur.testbench);
  await vscode.commands.executeCommand('vscode.diff', a, b, `CHORUS ${run.top}: round ${index} ↔ round ${index + 1}`);
}

/** CHORUS: Open Source Line (1-based line). */
export async function openLocation(file: string, line: number): Promise<void> {
  const pos = new vscode.Position(Math.max(0, line - 1), 0);
  await vscode.window.showTextDocument(vscode.Uri.file(file), { selection: new vscode.Range(pos, pos) });
}

/** CHORUS: Open Run Log / Report / JUnit: a file of the run's folder (the worker wrote it, as the
 * CLI's chorus-out/): the log and JUnit as text, the coverage report as a page beside the editor. */
export async function openRunFile(s: Session, id: string, file: RunFile): Promise<void> {
  const run = s.history.get(id);
  const path = run?.runFolder?.[file];
  if (!run || !path) {
    void vscode.window.showWarningMessage(`CHORUS: this run has no ${file} (it wrote no run folder)`);
    return;
  }
  if (!existsSync(path)) {
    void vscode.window.showWarningMessage(`CHORUS: ${path} is gone (the run folder was moved or deleted)`);
    return;
  }
  if (file === 'report') return showReport(s.ctx.extensionUri, path, `coverage of ${run.top || 'the design'}`);
  await vscode.window.showTextDocument(vscode.Uri.file(path), { viewColumn: vscode.ViewColumn.Beside, preview: true });
}
