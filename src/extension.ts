// VS Code entry point: registers the CHORUS commands; all work goes through src/extension/*
// adapters and a worker process running src/core.
import * as vscode from 'vscode';
import { join } from 'node:path';
import { Controller } from './extension/controller.js';
import { workerEnv } from './extension/config.js';
import { trackEditorContext } from './extension/editorContext.js';
import { RunTreeProvider } from './extension/runTree.js';
import { selectSimulator } from './extension/simulatorPick.js';
import { maybeShowWalkthrough, openExample, WALKTHROUGH_ID } from './extension/onboarding.js';
import type { RunNode } from './extension/runTreeModel.js';

let controller: Controller | null = null;

export function activate(ctx: vscode.ExtensionContext): { controller: Controller } {
  const c = new Controller(ctx, join(ctx.extensionUri.fsPath, 'dist', 'extension-worker.mjs'), workerEnv);
  controller = c;
  const reg = (id: string, f: (...args: never[]) => unknown): void => {
    ctx.subscriptions.push(vscode.commands.registerCommand(id, f as (...args: unknown[]) => unknown));
  };
  reg('chorus.generateTestbench', (uri?: vscode.Uri, uris?: vscode.Uri[]) => c.generate(uri, uris));
  reg('chorus.refineTestbench', (uri?: vscode.Uri) => c.refine(uri));
  reg('chorus.runCoverage', (uri?: vscode.Uri) => c.runCoverage(uri));
  reg('chorus.showDashboard', () => c.dashboard.show());
  reg('chorus.selectModel', () => c.selectModel());
  reg('chorus.selectSimulator', () => selectSimulator());
  reg('chorus.cancel', () => c.cancel());
  reg('chorus.editProject', (uri?: vscode.Uri) => c.editProject(uri));
  // The CHORUS view: run history as a tree; clicking a round opens its testbench, a point its line.
  const tree = new RunTreeProvider(c.history);
  ctx.subscriptions.push(tree, vscode.window.createTreeView('chorus.runs', { treeDataProvider: tree, showCollapseAll: true }));
  reg('chorus.openRound', (runId: string, index: number) => c.openRound(runId, index));
  reg('chorus.diffRound', (node: RunNode) => node && node.kind !== 'run' && c.diffRound(node.runId, node.index));
  reg('chorus.openLocation', async (file: string, line: number) => {
    const pos = new vscode.Position(Math.max(0, line - 1), 0);
    await vscode.window.showTextDocument(vscode.Uri.file(file), { selection: new vscode.Range(pos, pos) });
  });
  reg('chorus.openExample', () => openExample(ctx));
  reg('chorus.openWalkthrough', () => vscode.commands.executeCommand('workbench.action.openWalkthrough', WALKTHROUGH_ID, false));
  ctx.subscriptions.push(c, trackEditorContext());
  void maybeShowWalkthrough(ctx);
  return { controller: c };
}

export function deactivate(): void {
  controller?.dispose();
  controller = null;
}
