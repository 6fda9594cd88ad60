// The CHORUS view in the activity bar: the run history as a tree (runs -> rounds -> uncovered
// points). Clicking a round opens its testbench, its context menu diffs it with the round before,
// and a point opens the source line. The dashboard stays for charts.
import * as vscode from 'vscode';
import type { RunHistory } from './history.js';
import { children, view, type RunNode } from './runTreeModel.js';

export class RunTreeProvider implements vscode.TreeDataProvider<RunNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<RunNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly sub: { dispose(): void };

  constructor(private readonly history: RunHistory) {
    this.sub = history.onChange(() => this.changed.fire(undefined));
  }

  getChildren(node?: RunNode): RunNode[] {
    return children(this.history.all(), node);
  }

  getTreeItem(node: RunNode): vscode.TreeItem {
    const v = view(this.history.all(), node);
    if (!v) return new vscode.TreeItem('(gone)');
    const item = new vscode.TreeItem(
      v.label,
      v.collapsible ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
    );
    item.description = v.description;
    item.tooltip = v.tooltip;
    item.iconPath = new vscode.ThemeIcon(v.icon);
    item.contextValue = v.contextValue;
    if (v.open) {
      const args = v.open.command === 'vscode.open' ? [vscode.Uri.file(v.open.args[0] as string)] : v.open.args;
      item.command = { command: v.open.command, title: 'Open', arguments: args };
    }
    return item;
  }

  dispose(): void {
    this.sub.dispose();
    this.changed.dispose();
  }
}
