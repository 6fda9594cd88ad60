// VS Code entry point: registers the CHORUS commands; all work goes through src/extension/*
// adapters and a worker process running src/core.
import * as vscode from 'vscode';
import { join } from 'node:path';
import { Controller } from './extension/controller.js';
import { workerEnv } from './extension/config.js';
import { trackEditorContext } from './extension/editorContext.js';

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
  reg('chorus.cancel', () => c.cancel());
  reg('chorus.editProject', (uri?: vscode.Uri) => c.editProject(uri));
  ctx.subscriptions.push(c, trackEditorContext());
  return { controller: c };
}

export function deactivate(): void {
  controller?.dispose();
  controller = null;
}
