// Context keys that let `when` clauses hide commands that cannot apply to the active editor:
// Refine and Run Coverage need an open testbench, Generate needs an open design file.
import * as vscode from 'vscode';
import { basename } from 'node:path';
import { looksLikeTestbench } from '../core/run/sources.js';

const HDL_LANGS = new Set(['verilog', 'systemverilog']);
const HDL_EXT = /\.(sv|svh|v|vh)$/i;

function update(editor: vscode.TextEditor | undefined): void {
  const doc = editor?.document;
  const hdl = !!doc && (HDL_LANGS.has(doc.languageId) || HDL_EXT.test(doc.fileName));
  const tb = hdl && looksLikeTestbench(basename(doc.fileName), doc.getText());
  void vscode.commands.executeCommand('setContext', 'chorus.editorIsHdl', hdl);
  void vscode.commands.executeCommand('setContext', 'chorus.editorIsTestbench', tb);
}

/** Keeps `chorus.editorIsHdl` and `chorus.editorIsTestbench` in step with the active editor. */
export function trackEditorContext(): vscode.Disposable {
  update(vscode.window.activeTextEditor);
  return vscode.Disposable.from(
    vscode.window.onDidChangeActiveTextEditor(update),
    vscode.workspace.onDidSaveTextDocument((d) => {
      if (vscode.window.activeTextEditor?.document === d) update(vscode.window.activeTextEditor);
    }),
  );
}
