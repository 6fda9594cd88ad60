// What the commands share, so each command family (generate.ts, refine.ts, coverage.ts, ...) is a
// set of thin adapters over it: the output channel, the status bar, the Problems panel, the
// coverage views, the run history and dashboard, the worker (a new one when a setting it reads at
// start changes), the one run in progress (begin/end/cancel), and what earlier runs left behind
// (each testbench's last result, the last project file).
import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { SimResult } from '../../core/run/types.js';
import type { DesignOptions } from '../../core/run/design.js';
import { safeText } from '../../core/run/frontEnd.js';
import { groupDiagnostics } from '../diagnostics.js';
import { resolveDesign, type ResolvedDesign } from '../designResolver.js';
import { readProjectFile, validateProject, writeProjectFile } from '../../core/run/sources.js';
import { CoverageDecorations, CoverageTests } from '../views/coverageUi.js';
import { Dashboard } from '../views/dashboard.js';
import { RunHistory, type RunRecord } from '../views/history.js';
import { Revisions } from '../views/revisions.js';
import { StatusBar, type StatusState } from '../views/statusBar.js';
import type { ProjectView } from '../../../webview/protocol.js';
import { WorkerClient, WorkerError } from '../worker/client.js';
import { changedWorkerSettings, workerRestartPlan } from '../worker/settings.js';
import type { RunFile } from '../../../webview/protocol.js';
import type { FileLineCoverage } from '../views/coverageData.js';

export const UNTRUSTED_MESSAGE =
  'CHORUS does not run a simulator or generated testbenches in an untrusted workspace: a testbench becomes a native executable. Trust the workspace (Manage Workspace Trust) to generate, refine or simulate.';

export interface LastResult {
  design: DesignOptions;
  result: SimResult | null;
}

/** What the session's views call back into: the command modules, handed in by the controller so
 * that the session imports none of them (they all import the session). */
export interface SessionActions {
  coverageForTest(
    s: Session,
    tb: vscode.Uri,
    token: vscode.CancellationToken,
  ): Promise<{ passed: boolean; message: string; files: FileLineCoverage[] } | null>;
  openRound(s: Session, id: string, index: number): Promise<void>;
  diffRound(s: Session, id: string, index: number): Promise<void>;
  openRunFile(s: Session, id: string, file: RunFile): Promise<void>;
}

export class Session implements vscode.Disposable {
  readonly output: vscode.OutputChannel;
  readonly status: StatusBar;
  readonly diagnostics: vscode.DiagnosticCollection;
  readonly decorations: CoverageDecorations;
  readonly tests: CoverageTests;
  readonly history: RunHistory;
  readonly dashboard: Dashboard;
  readonly revisions = new Revisions();
  /** Last result per testbench path (for Refine). */
  readonly last = new Map<string, LastResult>();
  lastProjectPath: string | null = null;
  private client: WorkerClient;
  private readonly newWorker: () => WorkerClient;
  /** Settings the worker reads at start that changed during a run: it restarts when the run ends. */
  private staleWorkerSettings: string[] = [];
  private current: AbortController | null = null;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    readonly ctx: vscode.ExtensionContext,
    workerScript: string,
    workerEnv: () => NodeJS.ProcessEnv,
    actions: SessionActions,
  ) {
    this.output = vscode.window.createOutputChannel('CHORUS');
    this.status = new StatusBar();
    this.diagnostics = vscode.languages.createDiagnosticCollection('chorus');
    this.decorations = new CoverageDecorations(vscode.Uri.joinPath(ctx.extensionUri, 'media'));
    this.tests = new CoverageTests((tb, token) => actions.coverageForTest(this, tb, token));
    this.history = new RunHistory(ctx.workspaceState);
    // What the worker process prints (its libraries, a crash) reaches the output channel as text only.
    this.newWorker = () => new WorkerClient(workerScript, workerEnv, (s) => this.output.append(safeText(s)));
    this.client = this.newWorker();
    this.dashboard = new Dashboard(ctx.extensionUri, this.history, {
      project: () => this.projectView(),
      saveProject: async (path, project) => {
        const target = path ?? this.lastProjectPath;
        if (!target) throw new Error('no project file location yet: run Generate Testbench on a design first');
        writeProjectFile(target, validateProject(project, target));
        this.lastProjectPath = target;
        return `saved ${target}`;
      },
      openRound: (id, i) => actions.openRound(this, id, i),
      diffRound: (id, i) => actions.diffRound(this, id, i),
      openRunFile: (id, f) => actions.openRunFile(this, id, f),
      command: (c) => {
        const map = {
          generate: 'chorus.generateTestbench',
          runCoverage: 'chorus.runCoverage',
          selectModel: 'chorus.selectModel',
          cancel: 'chorus.cancel',
        } as const;
        void vscode.commands.executeCommand(map[c]);
      },
      log: (line) => this.output.appendLine(line),
    });
    this.subs.push(
      vscode.workspace.onDidChangeConfiguration((e) => this.onWorkerSettings(changedWorkerSettings((s) => e.affectsConfiguration(s)))),
    );
  }

  /** The worker for the next request (a new one after a change of the settings it starts with). */
  get worker(): WorkerClient {
    return this.client;
  }

  /** A simulator path changed: the worker read the old one at start, so the next run needs a new
   * worker. Never under a running job: that waits for the run to end, and the user is told. */
  private onWorkerSettings(changed: string[]): void {
    const plan = workerRestartPlan(changed, this.current !== null);
    if (plan === 'none') return;
    this.staleWorkerSettings = [...new Set([...this.staleWorkerSettings, ...changed])];
    if (plan === 'now') this.restartWorker();
    else
      void vscode.window.showInformationMessage(
        `CHORUS: ${changed.join(', ')} changed; the current run keeps the old simulator, the next run uses the new one`,
      );
  }

  private restartWorker(): void {
    if (!this.staleWorkerSettings.length) return;
    this.output.appendLine(`[CHORUS] ${this.staleWorkerSettings.join(', ')} changed: restarting the worker for the next run`);
    this.staleWorkerSettings = [];
    // A new client, not the old one reused: requests the old process still answers stay its own.
    const old = this.client;
    this.client = this.newWorker();
    old.dispose();
  }

  setStatus(state: StatusState, text?: string): void {
    this.status.set(state, text);
  }

  trusted(): boolean {
    if (vscode.workspace.isTrusted) return true;
    void vscode.window.showWarningMessage(UNTRUSTED_MESSAGE, 'Manage Workspace Trust').then((p) => {
      if (p) void vscode.commands.executeCommand('workbench.trust.manage');
    });
    return false;
  }

  /** Starts a run, cancelling the one in progress. */
  begin(): AbortController {
    this.current?.abort();
    const c = new AbortController();
    this.current = c;
    void vscode.commands.executeCommand('setContext', 'chorus.busy', true);
    return c;
  }

  end(c: AbortController): void {
    if (this.current === c) {
      this.current = null;
      void vscode.commands.executeCommand('setContext', 'chorus.busy', false);
      this.restartWorker();
    }
  }

  cancel(): void {
    if (!this.current) {
      void vscode.window.showInformationMessage('CHORUS: nothing to cancel');
      return;
    }
    this.output.appendLine('[CHORUS] cancel requested');
    this.current.abort();
  }

  private projectView(): ProjectView {
    const path = this.lastProjectPath;
    if (!path) return { path: null, project: null };
    if (!existsSync(path)) return { path, project: null };
    try {
      return { path, project: readProjectFile(path) };
    } catch (e) {
      return { path, project: null, error: (e as Error).message };
    }
  }

  /** The command's file: the one it was invoked on, else the active editor's. */
  targetUri(uri?: vscode.Uri): vscode.Uri | null {
    if (uri instanceof vscode.Uri) return uri;
    const ed = vscode.window.activeTextEditor;
    if (ed && ed.document.uri.scheme === 'file') return ed.document.uri;
    return null;
  }

  /** The design a testbench runs against: its folder's, or the one it was generated for; the
   * testbench itself left out of the design files. */
  designForTestbench(tb: vscode.Uri): ResolvedDesign {
    const known = this.last.get(tb.fsPath);
    const r = resolveDesign(vscode.Uri.file(dirname(tb.fsPath)));
    if (known) r.design = known.design;
    r.design = { ...r.design, files: r.design.files.filter((f) => resolve(f) !== resolve(tb.fsPath)) };
    return r;
  }

  /** Runs a worker request with a cancellable progress notification; asks for the top when the
   * design holds several candidates and retries. */
  async withTop<T>(r: ResolvedDesign, run: (design: DesignOptions) => Promise<T>): Promise<T> {
    try {
      return await run(r.design);
    } catch (e) {
      if (e instanceof WorkerError && e.kind === 'multiple-tops' && e.info.candidates?.length) {
        const top = await vscode.window.showQuickPick(e.info.candidates, {
          title: 'CHORUS: the design has several top modules — which one is the DUT?',
          ignoreFocusOut: true,
        });
        if (!top) throw new WorkerError({ message: 'cancelled', kind: 'cancelled' });
        r.project = { ...r.project, top };
        r.design = { ...r.design, top };
        if (r.existing) writeProjectFile(r.projectPath, r.project);
        return await run(r.design);
      }
      throw e;
    }
  }

  /** A run that threw: its history entry says cancelled or failed, and the error is reported. */
  runFailed(run: RunRecord, what: string, e: unknown): void {
    this.history.update(run, {
      state: e instanceof WorkerError && e.kind === 'cancelled' ? 'cancelled' : 'failed',
      message: (e as Error).message,
    });
    this.reportError(what, e);
  }

  reportError(what: string, e: unknown): void {
    if (e instanceof WorkerError && e.kind === 'cancelled') {
      this.setStatus('idle', 'cancelled');
      void vscode.window.showInformationMessage(`CHORUS: ${what} cancelled: nothing was written`);
      return;
    }
    // Errors quote tools, model servers and simulations: text, never control sequences.
    const msg = safeText(e instanceof Error ? e.message : String(e));
    this.output.appendLine(`[CHORUS] ${what} failed: ${msg}`);
    this.setStatus('error', `${what} failed`);
    if (e instanceof WorkerError && e.info.diagnostics?.length) {
      const by = new Map<string, vscode.Diagnostic[]>();
      for (const [f, ds] of groupDiagnostics(e.info.diagnostics, '', '', process.cwd())) by.set(f, ds);
      for (const [f, ds] of by) this.diagnostics.set(vscode.Uri.file(f), ds);
    }
    void vscode.window.showErrorMessage(`CHORUS: ${what} failed: ${msg}`, 'Show Output').then((p) => p && this.output.show(true));
  }

  dispose(): void {
    this.current?.abort();
    this.client.dispose();
    this.output.dispose();
    this.status.dispose();
    this.diagnostics.dispose();
    this.decorations.dispose();
    this.tests.dispose();
    this.dashboard.dispose();
    this.revisions.dispose();
    this.subs.forEach((s) => s.dispose());
  }
}
