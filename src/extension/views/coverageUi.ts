// Coverage in the editor: line decorations (covered / partly / not covered, and a line whose misses
// are all explained: proven unreachable, witness found, not reached in N cycles; hover with counts)
// and VS Code's native test-coverage API (FileCoverage with statement and branch details: a line
// and branch metric, labelled as such beside the scored figure).
import * as vscode from 'vscode';
import type { FileLineCoverage } from './coverageData.js';
import { safeText } from '../../core/run/frontEnd.js';

export class CoverageDecorations implements vscode.Disposable {
  private readonly covered: vscode.TextEditorDecorationType;
  private readonly partial: vscode.TextEditorDecorationType;
  private readonly uncovered: vscode.TextEditorDecorationType;
  private readonly formal: Record<NonNullable<FileLineCoverage['marks'][number]['formal']>, vscode.TextEditorDecorationType>;
  private byFile = new Map<string, FileLineCoverage>();
  private readonly subs: vscode.Disposable[] = [];

  constructor(media: vscode.Uri) {
    const make = (color: string, gutter: string): vscode.TextEditorDecorationType =>
      vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        backgroundColor: new vscode.ThemeColor(color),
        overviewRulerColor: new vscode.ThemeColor(color),
        overviewRulerLane: vscode.OverviewRulerLane.Left,
        gutterIconPath: vscode.Uri.joinPath(media, gutter),
        gutterIconSize: 'contain',
      });
    this.covered = make('chorus.coveredLineBackground', 'covered.svg');
    this.partial = make('chorus.partialLineBackground', 'partial.svg');
    this.uncovered = make('chorus.uncoveredLineBackground', 'uncovered.svg');
    this.formal = {
      unreachable: make('chorus.unreachableLineBackground', 'unreachable.svg'),
      witness: make('chorus.witnessLineBackground', 'witness.svg'),
      bounded: make('chorus.boundedLineBackground', 'bounded.svg'),
    };
    this.subs.push(vscode.window.onDidChangeVisibleTextEditors((eds) => eds.forEach((e) => this.apply(e))));
  }

  set(files: FileLineCoverage[]): void {
    this.byFile = new Map(files.map((f) => [f.file, f]));
    for (const e of vscode.window.visibleTextEditors) this.apply(e);
  }

  clear(): void {
    this.byFile.clear();
    for (const e of vscode.window.visibleTextEditors) this.apply(e);
  }

  get files(): FileLineCoverage[] {
    return [...this.byFile.values()];
  }

  private apply(editor: vscode.TextEditor): void {
    const f = this.byFile.get(editor.document.uri.fsPath);
    const cov: vscode.DecorationOptions[] = [];
    const part: vscode.DecorationOptions[] = [];
    const unc: vscode.DecorationOptions[] = [];
    const formal = {
      unreachable: [] as vscode.DecorationOptions[],
      witness: [] as vscode.DecorationOptions[],
      bounded: [] as vscode.DecorationOptions[],
    };
    for (const m of f?.marks ?? []) {
      if (m.line < 1 || m.line > editor.document.lineCount) continue;
      // The hover names points and reasons from the design's text and the simulation: shown as
      // markdown that runs nothing (no command links, no HTML).
      const hover = new vscode.MarkdownString(safeText(m.hover), false);
      hover.isTrusted = false;
      hover.supportHtml = false;
      const o: vscode.DecorationOptions = { range: new vscode.Range(m.line - 1, 0, m.line - 1, 0), hoverMessage: hover };
      if (m.formal) formal[m.formal].push(o);
      else (m.state === 'covered' ? cov : m.state === 'partial' ? part : unc).push(o);
    }
    editor.setDecorations(this.covered, cov);
    editor.setDecorations(this.partial, part);
    editor.setDecorations(this.uncovered, unc);
    for (const k of ['unreachable', 'witness', 'bounded'] as const) editor.setDecorations(this.formal[k], formal[k]);
  }

  dispose(): void {
    this.covered.dispose();
    this.partial.dispose();
    this.uncovered.dispose();
    Object.values(this.formal).forEach((d) => d.dispose());
    this.subs.forEach((s) => s.dispose());
  }
}

/** FileCoverage with its statement/branch details, for one design file. */
export class ChorusFileCoverage extends vscode.FileCoverage {
  constructor(readonly data: FileLineCoverage) {
    const lines = data.lines;
    const branchTotal = data.branches.length;
    super(
      vscode.Uri.file(data.file),
      new vscode.TestCoverageCount(lines.filter((l) => l.covered).length, lines.length),
      branchTotal ? new vscode.TestCoverageCount(data.branches.filter((b) => b.count > 0).length, branchTotal) : undefined,
    );
  }

  details(): vscode.FileCoverageDetail[] {
    return this.data.lines.map((l) => {
      const arms = this.data.branches
        .filter((b) => b.line === l.line)
        .map((b) => new vscode.BranchCoverage(b.count, new vscode.Position(b.line - 1, Math.max(0, b.column - 1)), b.label || 'branch'));
      return new vscode.StatementCoverage(l.count, new vscode.Range(l.line - 1, 0, l.line - 1, 200), arms);
    });
  }
}

/** The Test Explorer side: one test item per testbench, a Coverage run profile that simulates it. */
export class CoverageTests implements vscode.Disposable {
  readonly controller: vscode.TestController;

  constructor(
    run: (
      tb: vscode.Uri,
      token: vscode.CancellationToken,
    ) => Promise<{ passed: boolean; message: string; files: FileLineCoverage[] } | null>,
  ) {
    this.controller = vscode.tests.createTestController('chorus', 'CHORUS testbenches');
    const handler = async (request: vscode.TestRunRequest, token: vscode.CancellationToken): Promise<void> => {
      const items: vscode.TestItem[] = [];
      if (request.include) items.push(...request.include);
      else this.controller.items.forEach((i) => items.push(i));
      const testRun = this.controller.createTestRun(request, 'CHORUS coverage');
      for (const item of items) {
        if (token.isCancellationRequested) break;
        if (!item.uri) continue;
        testRun.started(item);
        const t0 = Date.now();
        try {
          const r = await run(item.uri, token);
          if (!r) testRun.skipped(item);
          else {
            for (const f of r.files) testRun.addCoverage(new ChorusFileCoverage(f));
            if (r.passed) testRun.passed(item, Date.now() - t0);
            else testRun.failed(item, new vscode.TestMessage(safeText(r.message)), Date.now() - t0);
          }
        } catch (e) {
          testRun.errored(item, new vscode.TestMessage(safeText((e as Error).message)), Date.now() - t0);
        }
      }
      testRun.end();
    };
    const profile = this.controller.createRunProfile('Coverage', vscode.TestRunProfileKind.Coverage, handler, true);
    profile.loadDetailedCoverage = async (_run, fc) => (fc instanceof ChorusFileCoverage ? fc.details() : []);
    this.controller.createRunProfile('Run', vscode.TestRunProfileKind.Run, handler, true);
  }

  item(tb: vscode.Uri): vscode.TestItem {
    const id = tb.toString();
    let it = this.controller.items.get(id);
    if (!it) {
      it = this.controller.createTestItem(id, tb.path.split('/').pop() ?? id, tb);
      this.controller.items.add(it);
    }
    return it;
  }

  /**
   * The scored figure beside the testbench in the Test Explorer. VS Code's Test Coverage view and
   * Explorer badges compute their own percentage from the line and branch counts this controller
   * reports (they can show no other metric), so the item says which figure is the score.
   */
  label(tb: vscode.Uri, figure: string): void {
    const item = this.item(tb);
    item.description = `${figure} (the Test Coverage view counts lines and branches)`;
  }

  /** Publishes a run made by the Run Coverage command in the Test Coverage view. */
  publish(tb: vscode.Uri, passed: boolean, message: string, files: FileLineCoverage[], durationMs: number): void {
    const item = this.item(tb);
    const run = this.controller.createTestRun(new vscode.TestRunRequest([item]), 'CHORUS coverage', false);
    run.started(item);
    for (const f of files) run.addCoverage(new ChorusFileCoverage(f));
    if (passed) run.passed(item, durationMs);
    else run.failed(item, new vscode.TestMessage(message), durationMs);
    run.end();
  }

  dispose(): void {
    this.controller.dispose();
  }
}
