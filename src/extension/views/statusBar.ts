// The one CHORUS status bar item: what is running (idle, busy, done, error) and, in its tooltip,
// the model in use; a click opens the dashboard.
import * as vscode from 'vscode';
import { modelSource } from '../config.js';

export type StatusState = 'idle' | 'busy' | 'done' | 'error';

export class StatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  /** The model the worker reported for the last run (engine and device included). */
  modelInUse: string | null = null;

  constructor() {
    this.item = vscode.window.createStatusBarItem('chorus.status', vscode.StatusBarAlignment.Left, 10);
    this.item.name = 'CHORUS';
    this.item.command = 'chorus.showDashboard';
    this.set('idle');
    this.item.show();
  }

  set(state: StatusState, text?: string): void {
    const icon = state === 'busy' ? '$(sync~spin)' : state === 'error' ? '$(error)' : state === 'done' ? '$(check)' : '$(beaker)';
    this.item.text = `${icon} CHORUS${text ? `: ${text}` : ''}`;
    const model = modelSource() === 'none' ? 'model-free generator' : `model: ${this.modelInUse ?? modelSource()}`;
    this.item.tooltip =
      state === 'busy'
        ? `CHORUS is working (${model}) — click for the dashboard; run "CHORUS: Cancel" to stop`
        : `CHORUS (${model}) — click for the dashboard`;
  }

  dispose(): void {
    this.item.dispose();
  }
}
