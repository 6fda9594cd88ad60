// The commands: thin adapters from VS Code to the worker (which runs src/core).
import * as vscode from 'vscode';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import type { SimResult } from '../core/sim/result.js';
import { generateSettings, modelConfig, modelSource, outputDirectory, SECRET_API_KEY } from './config.js';
import { CoverageDecorations, CoverageTests } from './coverageUi.js';
import { groupDiagnostics } from './diagnostics.js';
import { offerProjectFile, resolveDesign, type ResolvedDesign } from './designResolver.js';
import { Dashboard } from './dashboard.js';
import { previousTestbench, RunHistory, type RunRecord } from './history.js';
import { freeTestbenchPath, HDL_EXT, readProjectFile, validateProject, writeProjectFile } from './project.js';
import { pct, type ProjectView } from './webviewProtocol.js';
import { WorkerClient, WorkerError } from './workerClient.js';
import { changedWorkerSettings, workerRestartPlan } from './workerSettings.js';
import type { DesignOptions } from '../core/design/load.js';
import { roundRecord, type GenerateOutcome, type ModelConfig, type ProgressEvent } from './workerProtocol.js';
import type { FileLineCoverage } from './coverageData.js';
import { safeLine, safeText } from '../core/util/untrusted.js';

export const UNTRUSTED_MESSAGE =
  'CHORUS does not run a simulator or generated testbenches in an untrusted workspace: a testbench becomes a native executable. Trust the workspace (Manage Workspace Trust) to generate, refine or simulate.';

export const REVISION_SCHEME = 'chorus-rev';
/** Proposed testbench revisions kept for diff editors; older ones are dropped. */
const MAX_REVISIONS = 16;

interface LastResult {
  design: DesignOptions;
  result: SimResult | null;
}

export class Controller implements vscode.Disposable {
  readonly output: vscode.OutputChannel;
  readonly status: vscode.StatusBarItem;
  readonly diagnostics: vscode.DiagnosticCollection;
  readonly decorations: CoverageDecorations;
  readonly tests: CoverageTests;
  readonly history: RunHistory;
  readonly dashboard: Dashboard;
  private worker: WorkerClient;
  private readonly newWorker: () => WorkerClient;
  /** Settings the worker reads at start that changed during a run: it restarts when the run ends. */
  private staleWorkerSettings: string[] = [];
  private current: AbortController | null = null;
  private readonly revisions = new Map<string, string>();
  private readonly revisionEvents = new vscode.EventEmitter<vscode.Uri>();
  /** Last result per testbench path (for Refine). */
  private readonly last = new Map<string, LastResult>();
  private lastProjectPath: string | null = null;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    private readonly ctx: vscode.ExtensionContext,
    workerScript: string,
    workerEnv: () => NodeJS.ProcessEnv,
  ) {
    this.output = vscode.window.createOutputChannel('CHORUS');
    this.status = vscode.window.createStatusBarItem('chorus.status', vscode.StatusBarAlignment.Left, 10);
    this.status.name = 'CHORUS';
    this.status.command = 'chorus.showDashboard';
    this.setStatus('idle');
    this.status.show();
    this.diagnostics = vscode.languages.createDiagnosticCollection('chorus');
    this.decorations = new CoverageDecorations(vscode.Uri.joinPath(ctx.extensionUri, 'media'));
    this.tests = new CoverageTests((tb, token) => this.coverageForTest(tb, token));
    this.history = new RunHistory(ctx.workspaceState);
    // What the worker process prints (its libraries, a crash) reaches the output channel as text only.
    this.newWorker = () => new WorkerClient(workerScript, workerEnv, (s) => this.output.append(safeText(s)));
    this.worker = this.newWorker();
    this.dashboard = new Dashboard(ctx.extensionUri, this.history, {
      project: () => this.projectView(),
      saveProject: async (path, project) => {
        const target = path ?? this.lastProjectPath;
        if (!target) throw new Error('no project file location yet: run Generate Testbench on a design first');
        writeProjectFile(target, validateProject(project, target));
        this.lastProjectPath = target;
        return `saved ${target}`;
      },
      openRound: (id, i) => this.openRound(id, i),
      diffRound: (id, i) => this.diffRound(id, i),
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
      vscode.workspace.registerTextDocumentContentProvider(REVISION_SCHEME, {
        onDidChange: this.revisionEvents.event,
        provideTextDocumentContent: (uri) => this.revisions.get(uri.toString()) ?? '',
      }),
      vscode.workspace.onDidCloseTextDocument((d) => {
        if (d.uri.scheme === REVISION_SCHEME) this.revisions.delete(d.uri.toString());
      }),
      vscode.workspace.onDidChangeConfiguration((e) => this.onWorkerSettings(changedWorkerSettings((s) => e.affectsConfiguration(s)))),
    );
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
    const old = this.worker;
    this.worker = this.newWorker();
    old.dispose();
  }

  /** The model the worker reported for the last run (engine and device included). */
  private modelInUse: string | null = null;

  setStatus(state: 'idle' | 'busy' | 'done' | 'error', text?: string): void {
    const icon = state === 'busy' ? '$(sync~spin)' : state === 'error' ? '$(error)' : state === 'done' ? '$(check)' : '$(beaker)';
    this.status.text = `${icon} CHORUS${text ? `: ${text}` : ''}`;
    const model = modelSource() === 'none' ? 'model-free generator' : `model: ${this.modelInUse ?? modelSource()}`;
    this.status.tooltip =
      state === 'busy'
        ? `CHORUS is working (${model}) — click for the dashboard; run "CHORUS: Cancel" to stop`
        : `CHORUS (${model}) — click for the dashboard`;
  }

  private trusted(): boolean {
    if (vscode.workspace.isTrusted) return true;
    void vscode.window.showWarningMessage(UNTRUSTED_MESSAGE, 'Manage Workspace Trust').then((p) => {
      if (p) void vscode.commands.executeCommand('workbench.trust.manage');
    });
    return false;
  }

  private begin(): AbortController {
    this.current?.abort();
    const c = new AbortController();
    this.current = c;
    void vscode.commands.executeCommand('setContext', 'chorus.busy', true);
    return c;
  }

  private end(c: AbortController): void {
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

  private targetUri(uri?: vscode.Uri): vscode.Uri | null {
    if (uri instanceof vscode.Uri) return uri;
    const ed = vscode.window.activeTextEditor;
    if (ed && ed.document.uri.scheme === 'file') return ed.document.uri;
    return null;
  }

  /** Runs a worker request with a cancellable progress notification; asks for the top when the
   * design holds several candidates and retries. */
  private async withTop<T>(r: ResolvedDesign, run: (design: DesignOptions) => Promise<T>): Promise<T> {
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

  private reportError(what: string, e: unknown): void {
    if (e instanceof WorkerError && e.kind === 'cancelled') {
      this.setStatus('idle', 'cancelled');
      void vscode.window.showInformationMessage(`CHORUS: ${what} cancelled`);
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

  // ---- Generate ----

  async generate(uri?: vscode.Uri, uris?: vscode.Uri[]): Promise<string | null> {
    if (!this.trusted()) return null;
    const target = this.targetUri(uri);
    if (!target) {
      void vscode.window.showWarningMessage('CHORUS: open a design file (.sv/.v) or pick one in the Explorer first');
      return null;
    }
    let resolved: ResolvedDesign;
    let model: ModelConfig | null;
    try {
      resolved = resolveDesign(target, uris?.filter((u) => HDL_EXT.test(u.fsPath)) ?? []);
      model = await modelConfig(this.ctx.secrets);
    } catch (e) {
      this.reportError('generation', e);
      return null;
    }
    this.lastProjectPath = resolved.projectPath;
    const settings = generateSettings();
    const ctl = this.begin();
    const modelName =
      model === null ? 'model-free generator' : model.kind === 'openai' ? `${model.model} @ ${model.baseUrl}` : `local ${model.modelDir}`;
    if (model === null)
      this.output.appendLine(
        '[CHORUS] no model configured: using the built-in model-free generator ("CHORUS: Select Model" to configure one)',
      );
    this.output.appendLine(
      `[CHORUS] generating a testbench for ${resolved.design.files.map((f) => basename(f)).join(', ') || resolved.design.fileLists?.join(', ')} with the ${modelName}`,
    );
    const run = this.history.start({
      kind: 'generate',
      top: resolved.project.top ?? '',
      model: modelName,
      simulator: settings.simulator,
      testbenchPath: null,
      designDir: resolved.dir,
    });
    this.setStatus('busy', 'generating…');
    try {
      const outcome = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'CHORUS: generating testbench', cancellable: true },
        async (progress, token) => {
          token.onCancellationRequested(() => ctl.abort());
          let lastPct = 0;
          const onProgress = (ev: ProgressEvent): void => {
            this.onProgress(ev, run, (message, fraction) => {
              const inc = fraction !== undefined ? Math.max(0, fraction * 100 - lastPct) : undefined;
              if (fraction !== undefined) lastPct = Math.max(lastPct, fraction * 100);
              progress.report({ message, increment: inc });
            });
          };
          return this.withTop(resolved, (design) =>
            this.worker.request('generate', { design, model, settings }, { signal: ctl.signal, onProgress }),
          );
        },
      );
      return await this.finishGenerate(outcome, resolved, run);
    } catch (e) {
      this.history.update(run, {
        state: e instanceof WorkerError && e.kind === 'cancelled' ? 'cancelled' : 'failed',
        message: (e as Error).message,
      });
      this.reportError('generation', e);
      return null;
    } finally {
      this.end(ctl);
    }
  }

  /** Progress text (status lines, the model's streamed reply) is a model's or a simulation's words:
   * it reaches the output channel, the notification and the status bar as text only. */
  private onProgress(ev: ProgressEvent, run: RunRecord, report: (message: string, fraction?: number) => void): void {
    switch (ev.kind) {
      case 'status': {
        const message = safeText(ev.message);
        report(message);
        this.output.appendLine(`[CHORUS] ${message}`);
        break;
      }
      case 'model': {
        const label = safeLine(ev.label);
        this.modelInUse = label;
        this.history.update(run, { model: label });
        this.output.appendLine(`[CHORUS] model: ${label}`);
        this.setStatus('busy', `${/llama\.cpp/.test(label) ? 'llama.cpp' : /ONNX/.test(label) ? 'ONNX' : 'model'} loaded`);
        break;
      }
      case 'round-start':
        report(`round ${ev.round + 1}/${ev.attempts}${ev.sample ? ` (sample ${ev.sample + 1})` : ''}`, ev.round / ev.attempts);
        this.setStatus('busy', `round ${ev.round + 1}/${ev.attempts}`);
        this.output.appendLine(`\n[CHORUS] ---- round ${ev.round + 1}/${ev.attempts}${ev.sample ? `, sample ${ev.sample + 1}` : ''} ----`);
        break;
      case 'text':
        this.output.append(safeText(ev.piece));
        break;
      case 'round-end': {
        const c = ev.record.coverage?.overall ?? null;
        this.history.addRound(run, ev.record);
        const msg = `round ${ev.record.round + 1}/${ev.attempts}: ${ev.record.status}, coverage ${pct(c)} (best ${pct(ev.bestCoverage)})`;
        this.output.appendLine(`\n[CHORUS] ${msg}`);
        report(msg, (ev.record.round + 1) / ev.attempts);
        this.setStatus('busy', `round ${ev.record.round + 1}/${ev.attempts} · ${pct(ev.bestCoverage)}`);
        break;
      }
    }
  }

  private async finishGenerate(o: GenerateOutcome, r: ResolvedDesign, run: RunRecord): Promise<string | null> {
    const best = o.best !== null ? o.rounds[o.best] : null;
    this.history.update(run, {
      top: o.top,
      rounds: o.rounds,
      best: o.best,
      model: o.model,
      simulator: o.simulator,
      state: o.cancelled ? 'cancelled' : 'done',
    });
    offerProjectFile(r, o.top);
    if ((!best || !best.testbench) && o.cancelled) {
      this.history.update(run, { state: 'cancelled', message: 'cancelled before any testbench' });
      this.setStatus('idle', 'cancelled');
      void vscode.window.showInformationMessage('CHORUS: generation cancelled');
      return null;
    }
    if (!best || !best.testbench) {
      this.history.update(run, { state: 'failed', message: 'no round produced a testbench' });
      this.setStatus('error', 'no testbench');
      void vscode.window
        .showErrorMessage('CHORUS: no round produced a usable testbench (see the CHORUS output)', 'Show Output')
        .then((p) => p && this.output.show(true));
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
    this.history.update(run, { testbenchPath: path, message: `best round ${best.round + 1}: ${pct(best.coverage?.overall)}` });
    this.last.set(path, { design: { ...r.design, top: o.top }, result: null });
    this.tests.item(vscode.Uri.file(path));
    const summary = `${basename(path)}: coverage ${pct(best.coverage?.overall)} (block ${pct(best.coverage?.block)}, toggle ${pct(best.coverage?.toggle)}) after ${o.rounds.length} round${o.rounds.length === 1 ? '' : 's'}${o.cancelled ? ' (cancelled: best so far)' : ''}`;
    this.output.appendLine(`[CHORUS] wrote ${path} — ${summary}`);
    this.setStatus('done', pct(best.coverage?.overall));
    await vscode.window.showTextDocument(vscode.Uri.file(path), { viewColumn: vscode.ViewColumn.Beside, preview: false });
    void vscode.window.showInformationMessage(`CHORUS: ${summary}`, 'Run Coverage', 'Dashboard').then((p) => {
      if (p === 'Run Coverage') void vscode.commands.executeCommand('chorus.runCoverage', vscode.Uri.file(path));
      if (p === 'Dashboard') this.dashboard.show();
    });
    return path;
  }

  // ---- Run coverage ----

  private designForTestbench(tb: vscode.Uri): ResolvedDesign {
    const known = this.last.get(tb.fsPath);
    const r = resolveDesign(vscode.Uri.file(dirname(tb.fsPath)));
    if (known) r.design = known.design;
    r.design = { ...r.design, files: r.design.files.filter((f) => resolve(f) !== resolve(tb.fsPath)) };
    return r;
  }

  private async simulateTestbench(tb: vscode.Uri, signal: AbortSignal, onStatus?: (s: string) => void) {
    const doc = await vscode.workspace.openTextDocument(tb);
    const r = this.designForTestbench(tb);
    this.lastProjectPath = r.projectPath;
    onStatus?.(`simulating ${basename(tb.fsPath)}`);
    const settings = generateSettings();
    const out = await this.withTop(r, (design) =>
      this.worker.request('simulate', { design, testbench: { name: basename(tb.fsPath), content: doc.getText() }, settings }, { signal }),
    );
    this.last.set(tb.fsPath, { design: r.design, result: out.result });
    // Problems panel: every file of this run, replaced as a whole.
    this.diagnostics.clear();
    for (const [file, ds] of groupDiagnostics(out.result.diagnostics, basename(tb.fsPath), tb.fsPath, r.dir))
      this.diagnostics.set(vscode.Uri.file(file), ds);
    this.decorations.set(out.files);
    return { out, r };
  }

  private async coverageForTest(
    tb: vscode.Uri,
    token: vscode.CancellationToken,
  ): Promise<{ passed: boolean; message: string; files: FileLineCoverage[] } | null> {
    if (!this.trusted()) return null;
    const ctl = this.begin();
    token.onCancellationRequested(() => ctl.abort());
    try {
      const { out } = await this.simulateTestbench(tb, ctl.signal);
      return { passed: out.result.status === 'success', message: out.result.err_msg || out.result.status, files: out.files };
    } finally {
      this.end(ctl);
    }
  }

  async runCoverage(uri?: vscode.Uri): Promise<SimResult | null> {
    if (!this.trusted()) return null;
    const tb = this.targetUri(uri);
    if (!tb || !HDL_EXT.test(tb.fsPath)) {
      void vscode.window.showWarningMessage('CHORUS: open a testbench (.sv/.v) to run its coverage');
      return null;
    }
    const ctl = this.begin();
    const t0 = Date.now();
    this.setStatus('busy', 'simulating…');
    const run = this.history.start({
      kind: 'coverage',
      top: '',
      model: '-',
      simulator: generateSettings().simulator,
      testbenchPath: tb.fsPath,
      designDir: dirname(tb.fsPath),
    });
    try {
      const { out } = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'CHORUS: running coverage', cancellable: true },
        async (progress, token) => {
          token.onCancellationRequested(() => ctl.abort());
          return this.simulateTestbench(tb, ctl.signal, (s) => progress.report({ message: s }));
        },
      );
      const res = out.result;
      const doc = await vscode.workspace.openTextDocument(tb);
      this.history.update(run, {
        top: res.dutTop,
        simulator: `${res.simulator.name} ${res.simulator.version}`,
        rounds: [roundRecord(0, 0, doc.getText(), res)],
        best: 0,
        state: res.status === 'success' ? 'done' : 'failed',
        message: res.status === 'success' ? res.status : `${res.status}: ${res.err_msg.split('\n')[0]}`,
      });
      const passed = res.status === 'success';
      const c = res.coverage?.waived;
      const summary = passed
        ? `coverage ${pct(c?.overall)} (block ${pct(c?.block)}, toggle ${pct(c?.toggle)}, line ${pct(c?.line)}, branch ${pct(c?.branch)})`
        : `${res.status} at ${res.stage}: ${res.err_msg.split('\n')[0]}`;
      this.tests.publish(tb, passed, summary, out.files, Date.now() - t0);
      this.output.appendLine(`[CHORUS] ${basename(tb.fsPath)}: ${summary}`);
      this.setStatus(passed ? 'done' : 'error', passed ? pct(c?.overall) : res.status);
      // Show the design file with its decorations beside the testbench.
      const dut = out.files[0]?.file;
      if (dut && existsSync(dut))
        await vscode.window.showTextDocument(vscode.Uri.file(dut), {
          viewColumn: vscode.ViewColumn.Beside,
          preserveFocus: true,
          preview: true,
        });
      if (passed) void vscode.window.showInformationMessage(`CHORUS: ${basename(tb.fsPath)}: ${summary}`);
      else
        void vscode.window
          .showErrorMessage(`CHORUS: ${basename(tb.fsPath)}: ${summary}`, 'Show Problems')
          .then((p) => p && vscode.commands.executeCommand('workbench.actions.view.problems'));
      return res;
    } catch (e) {
      this.history.update(run, {
        state: e instanceof WorkerError && e.kind === 'cancelled' ? 'cancelled' : 'failed',
        message: (e as Error).message,
      });
      this.reportError('coverage run', e);
      return null;
    } finally {
      this.end(ctl);
    }
  }

  // ---- Refine ----

  async refine(uri?: vscode.Uri): Promise<void> {
    if (!this.trusted()) return;
    const tb = this.targetUri(uri);
    if (!tb || !HDL_EXT.test(tb.fsPath)) {
      void vscode.window.showWarningMessage('CHORUS: open the testbench to refine');
      return;
    }
    const doc = await vscode.workspace.openTextDocument(tb);
    let last = this.last.get(tb.fsPath)?.result ?? null;
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
      model = await modelConfig(this.ctx.secrets);
      r = this.designForTestbench(tb);
    } catch (e) {
      this.reportError('refinement', e);
      return;
    }
    const ctl = this.begin();
    const settings = generateSettings();
    const run = this.history.start({
      kind: 'refine',
      top: '',
      model: model?.kind ?? 'none',
      simulator: settings.simulator,
      testbenchPath: tb.fsPath,
      designDir: r.dir,
    });
    this.setStatus('busy', 'refining…');
    try {
      const out = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'CHORUS: refining testbench', cancellable: true },
        async (progress, token) => {
          token.onCancellationRequested(() => ctl.abort());
          return this.withTop(r, (design) =>
            this.worker.request(
              'refine',
              { design, testbench: { name: basename(tb.fsPath), content: doc.getText() }, last, log, model, settings },
              {
                signal: ctl.signal,
                onProgress: (ev) => this.onProgress(ev, run, (m) => progress.report({ message: m })),
              },
            ),
          );
        },
      );
      last = out.result;
      this.history.update(run, {
        rounds: [out.record],
        best: 0,
        model: out.model,
        state: 'done',
        top: out.result?.dutTop ?? '',
        message: `revision: ${pct(out.record.coverage?.overall)}`,
      });
      this.setStatus('done', `revision ${pct(out.record.coverage?.overall)}`);
      const accepted = await this.showRevision(tb, out.testbench, `revision: ${pct(out.record.coverage?.overall)}`);
      if (accepted) this.last.set(tb.fsPath, { design: r.design, result: out.result });
    } catch (e) {
      this.history.update(run, {
        state: e instanceof WorkerError && e.kind === 'cancelled' ? 'cancelled' : 'failed',
        message: (e as Error).message,
      });
      this.reportError('refinement', e);
    } finally {
      this.end(ctl);
    }
  }

  private revisionUri(name: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: REVISION_SCHEME, path: `/${Date.now().toString(36)}/${name}` });
    this.revisions.set(uri.toString(), text);
    // A long session refines many times: keep the newest revisions only (a Map iterates oldest
    // first), besides dropping each one when its diff editor closes.
    for (const k of this.revisions.keys()) {
      if (this.revisions.size <= MAX_REVISIONS) break;
      this.revisions.delete(k);
    }
    this.revisionEvents.fire(uri);
    return uri;
  }

  /** Shows the revision as a diff against the file; Accept replaces the file's text. */
  async showRevision(tb: vscode.Uri, text: string, label: string): Promise<boolean> {
    // A file ends with a newline, as a generated testbench does (else the diff shows a last line
    // that is not really different, and Accept leaves the file without one).
    const body = text.endsWith('\n') ? text : `${text}\n`;
    const rev = this.revisionUri(basename(tb.fsPath), body);
    await vscode.commands.executeCommand('vscode.diff', tb, rev, `${basename(tb.fsPath)} ↔ CHORUS ${label}`);
    const pick = await vscode.window.showInformationMessage(`CHORUS: accept the ${label} of ${basename(tb.fsPath)}?`, 'Accept', 'Reject');
    // The answer ends the review: the diff closes (after Accept the file shows the revision).
    const diffs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === rev.toString());
    await vscode.window.tabGroups.close(diffs).then(undefined, () => undefined);
    if (pick !== 'Accept') return false;
    const doc = await vscode.workspace.openTextDocument(tb);
    const edit = new vscode.WorkspaceEdit();
    edit.replace(tb, new vscode.Range(0, 0, doc.lineCount, 0), body);
    await vscode.workspace.applyEdit(edit);
    await doc.save();
    return true;
  }

  // ---- Dashboard helpers ----

  async openRound(id: string, index: number): Promise<void> {
    const run = this.history.get(id);
    const tb = run?.rounds[index]?.testbench;
    if (!run || !tb) return;
    const doc = await vscode.workspace.openTextDocument(this.revisionUri(`round${index + 1}_${run.top || 'tb'}.sv`, tb));
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: true });
  }

  async diffRound(id: string, index: number): Promise<void> {
    const run = this.history.get(id);
    const cur = run?.rounds[index];
    if (!run || !cur?.testbench) return;
    const prev = previousTestbench(run, index) ?? '';
    const a = this.revisionUri(`round${index}.sv`, prev);
    const b = this.revisionUri(`round${index + 1}.sv`, cur.testbench);
    await vscode.commands.executeCommand('vscode.diff', a, b, `CHORUS ${run.top}: round ${index} ↔ round ${index + 1}`);
  }

  // ---- Model selection ----

  async selectModel(): Promise<void> {
    const pick = await vscode.window.showQuickPick(
      [
        { label: '$(circuit-board) Model-free generator', description: 'built in, no model needed', id: 'none' as const },
        {
          label: '$(folder) Local model directory…',
          description: 'ONNX export (config.json, tokenizer, onnx/model*.onnx)',
          id: 'local' as const,
        },
        {
          label: '$(globe) OpenAI-compatible endpoint…',
          description: 'vLLM, SGLang, llama.cpp server, Ollama, LM Studio',
          id: 'openai' as const,
        },
      ],
      { title: 'CHORUS: where should testbenches come from?' },
    );
    if (!pick) return;
    const c = vscode.workspace.getConfiguration('chorus');
    const target = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
    if (pick.id === 'none') {
      await c.update('model.source', 'none', target);
      void vscode.window.showInformationMessage('CHORUS: using the built-in model-free generator');
      this.setStatus('idle');
      return;
    }
    if (pick.id === 'local') {
      const dir = await vscode.window.showOpenDialog({
        title: 'CHORUS: local model folder (a GGUF, or an ONNX export)',
        canSelectFolders: true,
        canSelectFiles: false,
        openLabel: 'Use this model',
      });
      if (!dir?.[0]) return;
      // (the worker's llama.ts decides for real; the extension host does not load node-llama-cpp)
      const hasGguf = readdirSync(dir[0].fsPath).some((f) => f.endsWith('.gguf'));
      const hasOnnx = existsSync(join(dir[0].fsPath, 'onnx'));
      const engines = [
        {
          label: 'llama.cpp',
          description: hasGguf
            ? "the folder's GGUF, in-process (node-llama-cpp); a GPU when a build for it loads"
            : 'needs a .gguf in the folder (chorus-train export --gguf q4_k_m)',
          id: 'llama',
        },
        {
          label: 'ONNX',
          description: hasOnnx
            ? 'onnx/model_*.onnx, in-process on the CPU (onnxruntime)'
            : 'needs onnx/model_q4.onnx in the folder (chorus-train export)',
          id: 'onnx',
        },
      ].sort((a, b) => Number(b.id === 'llama' ? hasGguf : hasOnnx) - Number(a.id === 'llama' ? hasGguf : hasOnnx));
      const engine = await vscode.window.showQuickPick(engines, { title: 'CHORUS: inference engine (both run in the editor, offline)' });
      if (!engine) return;
      const dtype =
        engine.id === 'onnx'
          ? await vscode.window.showQuickPick(['q4', 'q4f16', 'fp32'], { title: 'CHORUS: model precision (dtype)' })
          : c.get<string>('model.dtype', 'q4');
      if (!dtype) return;
      const model: ModelConfig = {
        kind: 'local',
        modelDir: dir[0].fsPath,
        dtype: dtype as 'fp32' | 'q4' | 'q4f16',
        allowDownload: false,
        engine: engine.id as 'llama' | 'onnx',
      };
      const check = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'CHORUS: loading the model to check it' },
        () => this.worker.request('checkModel', { model }),
      );
      if (!check.ok) {
        // (the reason names the folder: a toast shows its first line, so the reason comes first)
        void vscode.window.showErrorMessage(`CHORUS: no model loads from ${basename(dir[0].fsPath)}: ${safeText(check.message)}`);
        return;
      }
      await c.update('model.localPath', dir[0].fsPath, target);
      await c.update('model.engine', engine.id, target);
      await c.update('model.dtype', dtype, target);
      this.modelInUse = null;
      await c.update('model.source', 'local', target);
      void vscode.window.showInformationMessage(`CHORUS: ${safeText(check.message)}`);
      this.setStatus('idle');
      return;
    }
    const baseUrl = await vscode.window.showInputBox({
      title: 'CHORUS: OpenAI-compatible endpoint (base URL)',
      value: c.get<string>('model.endpoint') || 'http://127.0.0.1:8000/v1',
      validateInput: (v) => (/^https?:\/\/[^\s/]+/.test(v.trim()) ? null : 'a URL like http://127.0.0.1:8000/v1'),
      ignoreFocusOut: true,
    });
    if (!baseUrl) return;
    const key = await vscode.window.showInputBox({
      title: 'CHORUS: API key (stored in the secret store; leave empty for none)',
      password: true,
      ignoreFocusOut: true,
      placeHolder: 'empty: keep the stored key / none',
    });
    if (key === undefined) return;
    if (key) await this.ctx.secrets.store(SECRET_API_KEY, key);
    const apiKey = key || (await this.ctx.secrets.get(SECRET_API_KEY)) || undefined;
    const probe = await this.worker.request('checkModel', { model: { kind: 'openai', baseUrl: baseUrl.trim(), model: '', apiKey } });
    if (!probe.ok) {
      void vscode.window.showErrorMessage(`CHORUS: ${safeText(probe.message)}`);
      return;
    }
    let name: string | undefined;
    if (probe.models?.length) name = await vscode.window.showQuickPick(probe.models, { title: 'CHORUS: served model' });
    else
      name = await vscode.window.showInputBox({
        title: 'CHORUS: served model name',
        value: c.get<string>('model.name') ?? '',
        ignoreFocusOut: true,
      });
    if (!name) return;
    await c.update('model.endpoint', baseUrl.trim(), target);
    await c.update('model.name', name, target);
    await c.update('model.source', 'openai', target);
    void vscode.window.showInformationMessage(`CHORUS: using ${name} at ${baseUrl.trim()}`);
    this.setStatus('idle');
  }

  async editProject(uri?: vscode.Uri): Promise<void> {
    const target = this.targetUri(uri);
    if (!target) return;
    const r = resolveDesign(target);
    if (!r.existing) writeProjectFile(r.projectPath, r.project);
    this.lastProjectPath = r.projectPath;
    await vscode.window.showTextDocument(vscode.Uri.file(r.projectPath));
  }

  dispose(): void {
    this.current?.abort();
    this.worker.dispose();
    this.output.dispose();
    this.status.dispose();
    this.diagnostics.dispose();
    this.decorations.dispose();
    this.tests.dispose();
    this.dashboard.dispose();
    this.revisionEvents.dispose();
    this.subs.forEach((s) => s.dispose());
  }
}
