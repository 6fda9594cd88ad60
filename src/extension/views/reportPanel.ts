// The run folder's coverage.html (core/coverage/html.ts) in the editor: a webview beside the text,
// one panel reused for every report. The page is self-contained (its own CSP: no script, nothing
// fetched), so the panel runs no script and may load nothing from disk; its in-page links (a file,
// a line) move within the page.
import * as vscode from 'vscode';
import { readFileSync } from 'node:fs';

let panel: vscode.WebviewPanel | null = null;

export function showReport(extensionUri: vscode.Uri, path: string, title: string): void {
  const html = readFileSync(path, 'utf8');
  if (!panel) {
    panel = vscode.window.createWebviewPanel('chorus.report', title, vscode.ViewColumn.Beside, {
      enableScripts: false,
      localResourceRoots: [],
      enableFindWidget: true,
    });
    panel.iconPath = vscode.Uri.joinPath(extensionUri, 'media', 'chorus.svg');
    panel.onDidDispose(() => (panel = null));
  } else panel.reveal(vscode.ViewColumn.Beside);
  panel.title = title;
  panel.webview.html = html;
}
