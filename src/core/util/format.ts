// Formatting shared by the engine, the CLI, the editor and the webview (no Node imports: the
// webview bundles it): percentages and the `file:line:col: code: message` diagnostic line.

/** A fraction as a percentage (`0.5` -> `50.00%`); `n/a` when there is no figure. */
export function pct(x: number | null | undefined, digits = 2): string {
  return x === null || x === undefined ? 'n/a' : `${(100 * x).toFixed(digits)}%`;
}

/** The fields a diagnostic line needs (sim's Diagnostic, a design diagnostic, a lint message). */
export interface DiagnosticPosition {
  file: string;
  line: number;
  column: number;
  code?: string;
  message: string;
}

/** `file:line:col: code: message`, the compiler convention editors and terminals link;
 * `code: false` leaves the code out. Callers add their own suffix (suggestion, time). */
export function formatDiagnostic(d: DiagnosticPosition, opts: { code?: boolean } = {}): string {
  const code = opts.code !== false && d.code ? `${d.code}: ` : '';
  return `${d.file}:${d.line}:${d.column}: ${code}${d.message}`;
}
