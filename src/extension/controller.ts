// The command registry: one Session (what every command shares) and the command families under
// commands/, each contributed command id bound to its adapter. The controller holds no work of
// its own: the commands are thin adapters from VS Code to the worker (which runs src/core).
import * as vscode from 'vscode';
import type { SimResult } from '../core/run/types.js';
import { coverageForTest, runCoverage } from './commands/coverage.js';
import { generate } from './commands/generate.js';
import { downloadModel, setHubToken } from './commands/downloadModel.js';
import { diffRound, openLocation, openRound, openRunFile } from './commands/navigation.js';
import type { RunFile } from '../../webview/protocol.js';
import { openExample, WALKTHROUGH_ID } from './commands/onboarding.js';
import { editProject } from './commands/projectFile.js';
import { refine } from './commands/refine.js';
import { selectModel } from './commands/selectModel.js';
import { selectSimulator } from './commands/selectSimulator.js';
import { Session } from './commands/session.js';
import type { CoverageDecorations, CoverageTests } from './views/coverageUi.js';
import type { Dashboard } from './views/dashboard.js';
import type { RunHistory } from './views/history.js';
import type { StatusState } from './views/statusBar.js';
import { RunTreeProvider } from './views/runTree.js';
import type { RunNode } from './views/runTreeModel.js';

export { UNTRUSTED_MESSAGE } from './commands/session.js';
export { REVISION_SCHEME } from './views/revisions.js';

export class Controller implements vscode.Disposable {
  private readonly session: Session;

  constructor(ctx: vscode.ExtensionContext, workerScript: string, workerEnv: () => NodeJS.ProcessEnv) {
    this.session = new Session(ctx, workerScript, workerEnv, { coverageForTest, openRound, diffRound, openRunFile });
  }

  get output(): vscode.OutputChannel {
    return this.session.output;
  }
  get status(): vscode.StatusBarItem {
    return this.session.status.item;
  }
  get diagnostics(): vscode.DiagnosticCollection {
    return this.session.diagnostics;
  }
  get decorations(): CoverageDecorations {
    return this.session.decorations;
  }
  get tests(): CoverageTests {
    return this.session.tests;
  }
  get history(): RunHistory {
    return this.session.history;
  }
  get dashboard(): Dashboard {
    return this.session.dashboard;
  }

  setStatus(state: StatusState, text?: string): void {
    this.session.setStatus(state, text);
  }
  cancel(): void {
    this.session.cancel();
  }
  generate(uri?: vscode.Uri, uris?: vscode.Uri[]): Promise<string | null> {
    return generate(this.session, uri, uris);
  }
  runCoverage(uri?: vscode.Uri): Promise<SimResult | null> {
    return runCoverage(this.session, uri);
  }
  refine(uri?: vscode.Uri): Promise<void> {
    return refine(this.session, uri);
  }
  /** Shows the revision as a diff against the file; Accept replaces the file's text. */
  showRevision(tb: vscode.Uri, text: string, label: string): Promise<boolean> {
    return this.session.revisions.review(tb, text, label);
  }
  openRound(id: string, index: number): Promise<void> {
    return openRound(this.session, id, index);
  }
  diffRound(id: string, index: number): Promise<void> {
    return diffRound(this.session, id, index);
  }
  selectModel(): Promise<void> {
    return selectModel(this.session);
  }
  editProject(uri?: vscode.Uri): Promise<void> {
    return editProject(this.session, uri);
  }

  /** Binds every contributed command (package.json) to its adapter, and the CHORUS view's tree. */
  register(ctx: vscode.ExtensionContext): void {
    const reg = (id: string, f: (...args: never[]) => unknown): void => {
      ctx.subscriptions.push(vscode.commands.registerCommand(id, f as (...args: unknown[]) => unknown));
    };
    reg('chorus.generateTestbench', (uri?: vscode.Uri, uris?: vscode.Uri[]) => this.generate(uri, uris));
    reg('chorus.refineTestbench', (uri?: vscode.Uri) => this.refine(uri));
    reg('chorus.runCoverage', (uri?: vscode.Uri) => this.runCoverage(uri));
    reg('chorus.showDashboard', () => this.dashboard.show());
    reg('chorus.selectModel', () => this.selectModel());
    reg('chorus.downloadModel', (ref?: string) => downloadModel(this.session, typeof ref === 'string' ? ref : undefined));
    reg('chorus.setHubToken', () => setHubToken(this.session));
    reg('chorus.selectSimulator', () => selectSimulator());
    reg('chorus.cancel', () => this.cancel());
    reg('chorus.editProject', (uri?: vscode.Uri) => this.editProject(uri));
    // The CHORUS view: run history as a tree; clicking a round opens its testbench, a point its line.
    const tree = new RunTreeProvider(this.history);
    ctx.subscriptions.push(tree, vscode.window.createTreeView('chorus.runs', { treeDataProvider: tree, showCollapseAll: true }));
    reg('chorus.openRound', (runId: string, index: number) => this.openRound(runId, index));
    reg('chorus.diffRound', (node: RunNode) => node && 'index' in node && this.diffRound(node.runId, node.index));
    reg('chorus.openRunFile', (runId: string, file: RunFile) => openRunFile(this.session, runId, file));
    reg('chorus.openLocation', (file: string, line: number) => openLocation(file, line));
    reg('chorus.openExample', () => openExample(ctx));
    reg('chorus.openWalkthrough', () => vscode.commands.executeCommand('workbench.action.openWalkthrough', WALKTHROUGH_ID, false));
  }

  dispose(): void {
    this.session.dispose();
  }
}
