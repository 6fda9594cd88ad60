// The dashboard webview host: strict CSP with a nonce, the bundled dist/webview.js, typed messages.
import * as vscode from 'vscode';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { RunHistory } from './history.js';
import { runView } from './history.js';
import { isWebviewMessage, type HostToWebview, type ProjectView, type WebviewToHost } from './webviewProtocol.js';

export interface DashboardActions {
  project(): ProjectView;
  saveProject(path: string | null, project: NonNullable<ProjectView['project']>): Promise<string>;
  openRound(runId: string, index: number): Promise<void>;
  diffRound(runId: string, index: number): Promise<void>;
  command(c: Extract<WebviewToHost, { type: 'command' }>['command']): void;
}

export function dashboardHtml(
  webview: Pick<vscode.Webview, 'cspSource' | 'asWebviewUri'>,
  extensionUri: vscode.Uri,
  nonce: string,
): string {
  const script = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', 'webview.js'));
  const style = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'media', 'dashboard.css'));
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource} 'nonce-${nonce}'`,
    `font-src ${webview.cspSource}`,
    `img-src ${webview.cspSource} data:`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}" nonce="${nonce}">
<title>CHORUS Dashboard</title>
</head>
<body>
<main id="app"><p>Loading…</p></main>
<script type="module" nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
}

export class Dashboard implements vscode.Disposable {
  private panel: vscode.WebviewPanel | null = null;
  private readonly sub: { dispose(): void };

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly history: RunHistory,
    private readonly actions: DashboardActions,
  ) {
    this.sub = history.onChange(() => this.post());
  }

  show(): void {
    if (this.panel) {
      this.panel.reveal();
      this.post();
      return;
    }
    const panel = vscode.window.createWebviewPanel('chorus.dashboard', 'CHORUS Dashboard', vscode.ViewColumn.Active, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')],
    });
    panel.iconPath = vscode.Uri.joinPath(this.extensionUri, 'media', 'chorus.svg');
    const nonce = randomBytes(16).toString('base64');
    panel.webview.html = dashboardHtml(panel.webview, this.extensionUri, nonce);
    panel.webview.onDidReceiveMessage((m: unknown) => void this.onMessage(m));
    panel.onDidDispose(() => (this.panel = null));
    this.panel = panel;
  }

  refresh(): void {
    this.post();
  }

  private post(extra?: HostToWebview): void {
    if (!this.panel) return;
    const msg: HostToWebview = extra ?? { type: 'state', runs: this.history.all().map(runView), project: this.actions.project() };
    void this.panel.webview.postMessage(msg);
  }

  private async onMessage(m: unknown): Promise<void> {
    if (!isWebviewMessage(m)) return;
    switch (m.type) {
      case 'ready':
        this.post();
        break;
      case 'openLocation': {
        if (!existsSync(m.file)) {
          void vscode.window.showWarningMessage(`CHORUS: ${m.file} does not exist`);
          return;
        }
        const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(m.file));
        const pos = new vscode.Position(Math.max(0, m.line - 1), 0);
        await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, selection: new vscode.Range(pos, pos) });
        break;
      }
      case 'openRound':
        await this.actions.openRound(m.runId, m.index);
        break;
      case 'diffRound':
        await this.actions.diffRound(m.runId, m.index);
        break;
      case 'saveProject':
        try {
          const msg = await this.actions.saveProject(m.path, m.project);
          this.post({ type: 'projectSaved', ok: true, message: msg });
          this.post();
        } catch (e) {
          this.post({ type: 'projectSaved', ok: false, message: (e as Error).message });
        }
        break;
      case 'command':
        this.actions.command(m.command);
        break;
    }
  }

  dispose(): void {
    this.sub.dispose();
    this.panel?.dispose();
  }
}
