// Simulator diagnostics (1-based line/column) into the Problems panel.
import * as vscode from 'vscode';
import { isAbsolute, resolve } from 'node:path';
import type { Diagnostic } from '../core/run/types.js';
import { safeLine, safeText } from '../core/run/frontEnd.js';

export function toVscodeDiagnostic(d: Diagnostic): vscode.Diagnostic {
  const line = Math.max(0, d.line - 1);
  const col = Math.max(0, d.column - 1);
  const end = d.endColumn && d.endColumn > d.column ? d.endColumn - 1 : col + 1;
  const sev =
    d.severity === 'error'
      ? vscode.DiagnosticSeverity.Error
      : d.severity === 'warning'
        ? vscode.DiagnosticSeverity.Warning
        : vscode.DiagnosticSeverity.Information;
  // A simulation's words: text, never control or disguising invisible characters (the backends
  // already return them so; a worker error's diagnostics come here too).
  const msg = safeText(`${d.message}${d.suggestion ? ` (suggestion: ${d.suggestion})` : ''}${d.time ? ` [at ${d.time}]` : ''}`);
  const out = new vscode.Diagnostic(new vscode.Range(line, col, line, end), msg, sev);
  out.source = 'CHORUS';
  if (d.code) out.code = safeLine(d.code);
  return out;
}

/** Groups diagnostics by file: the testbench's name maps to its editor file, DUT paths resolve
 * against the design folder. */
export function groupDiagnostics(diags: Diagnostic[], tbName: string, tbPath: string, designDir: string): Map<string, vscode.Diagnostic[]> {
  const out = new Map<string, vscode.Diagnostic[]>();
  for (const d of diags) {
    const file = d.origin === 'testbench' || d.file === tbName ? tbPath : isAbsolute(d.file) ? d.file : resolve(designDir, d.file);
    const list = out.get(file) ?? [];
    list.push(toVscodeDiagnostic(d));
    out.set(file, list);
  }
  return out;
}
