// VS Code entry point: activation only. The commands are registered by the controller
// (src/extension/controller.ts, adapters under src/extension/commands/); all work goes through a
// worker process running src/core (src/extension/worker/).
import * as vscode from 'vscode';
import { join } from 'node:path';
import { Controller } from './extension/controller.js';
import { workerEnv } from './extension/config.js';
import { trackEditorContext } from './extension/editorContext.js';
import { maybeShowWalkthrough } from './extension/commands/onboarding.js';

let controller: Controller | null = null;

export function activate(ctx: vscode.ExtensionContext): { controller: Controller } {
  const c = new Controller(ctx, join(ctx.extensionUri.fsPath, 'dist', 'extension-worker.mjs'), workerEnv);
  controller = c;
  c.register(ctx);
  ctx.subscriptions.push(c, trackEditorContext());
  void maybeShowWalkthrough(ctx);
  return { controller: c };
}

export function deactivate(): void {
  controller?.dispose();
  controller = null;
}
