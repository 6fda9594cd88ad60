// The dashboard webview host: strict CSP with a nonce, the bundled dist/webview.js, typed messages
// (webview/protocol.ts), each one checked before it is acted on (webviewHost.ts).
import * as vscode from 'vscode';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { RunHistory } from './history.js';
import { runView } from './history.js';
import { dispatchWebviewMessage, type WebviewHandlers } from './webviewHost.js';
import type { DashboardCommand, HostMessage, ProjectView, RunFile, ToWebview } from '../../../webview/protocol.js';

export interface DashboardActions {
  project(): ProjectView;
  saveProject(path: string | null, project: NonNullable<ProjectView['project']>): Promise<string>;
  openRound(runId: string, index: number): Promise<void>;
  diffRound(runId: string, index: number): Promise<void>;
  openRunFile(runId: string, file: RunFile): Promise<void>;
  command(c: DashboardCommand): void;
  /** The output channel: why a message from the webview was dropped. */
  log(line: string): void;
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
    this.sub = history.onChange(() => this.postState());
  }

  show(): void {
    if (this.panel) {
      this.panel.reveal();
      this.postState();
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
    panel.webview.onDidReceiveMessage(
      (m: unknown) =>
        void dispatchWebviewMessage(
          m,
          this.handlers,
          (r) => this.send(r),
          (line) => this.actions.log(line),
        ),
    );
    panel.onDidDispose(() => (this.panel = null));
    this.panel = panel;
  }

  refresh(): void {
    this.postState();
  }

  private send(m: HostMessage): void {
    void this.panel?.webview.postMessage(m);
  }

  /** A ToWebview message, typed by the map. */
  private post<K extends keyof ToWebview>(type: K, data: ToWebview[K][0]): void {
    this.send({ type, data } as HostMessage);
  }

  private postState(): void {
    if (this.panel) this.post('state', { runs: this.history.all().map(runView), project: this.actions.project() });
  }

  private readonly handlers: WebviewHandlers = {
    ready: () => this.postState(),
    openLocation: async ({ file, line }) => {
      if (!existsSync(file)) {
        void vscode.window.showWarningMessage(`CHORUS: ${file} does not exist`);
        return;
      }
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
      const pos = new vscode.Position(Math.max(0, line - 1), 0);
      await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, selection: new vscode.Range(pos, pos) });
    },
    openRound: ({ runId, index }) => this.actions.openRound(runId, index),
    diffRound: ({ runId, index }) => this.actions.diffRound(runId, index),
    openRunFile: ({ runId, file }) => this.actions.openRunFile(runId, file),
    saveProject: async ({ path, project }) => {
      const saved = await this.actions.saveProject(path, project);
      this.postState();
      return saved;
    },
    command: ({ command }) => this.actions.command(command),
  };

  dispose(): void {
    this.sub.dispose();
    this.panel?.dispose();
  }
}
