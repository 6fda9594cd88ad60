// Typed messages between the dashboard webview (webview/main.ts) and the extension host
// (src/extension/dashboard.ts). Both sides compile against this file; it holds types and pure
// helpers only (no vscode, no DOM).
import type { CoverageFigures, UncoveredPoint } from '../core/coverage/model.js';
import type { ProjectFile } from '../core/design/types.js';
import { pct as formatPct } from '../core/util/format.js';

/** The project file (`chorus.json`): defined with the design types, shared with the webview. */
export type { ProjectFile };

export interface RoundView {
  sample: number;
  round: number;
  status: string;
  coverage: CoverageFigures | null;
  uncovered: UncoveredPoint[];
  errors: number;
  notes: string[];
  hasTestbench: boolean;
  lines: number;
}

export interface RunView {
  id: string;
  /** `generate`, `refine` or `coverage`. */
  kind: string;
  startedAt: string;
  top: string;
  model: string;
  simulator: string;
  /** `running`, `done`, `cancelled`, `failed`. */
  state: string;
  message: string;
  rounds: RoundView[];
  best: number | null;
  testbenchPath: string | null;
}

export interface ProjectView {
  path: string | null;
  project: ProjectFile | null;
  /** Set when the file exists but does not parse. */
  error?: string;
}

export type HostToWebview =
  { type: 'state'; runs: RunView[]; project: ProjectView } | { type: 'projectSaved'; ok: boolean; message: string };

export type WebviewToHost =
  | { type: 'ready' }
  | { type: 'openLocation'; file: string; line: number }
  | { type: 'openRound'; runId: string; index: number }
  | { type: 'diffRound'; runId: string; index: number }
  | { type: 'saveProject'; path: string | null; project: ProjectFile }
  | { type: 'command'; command: 'generate' | 'runCoverage' | 'selectModel' | 'cancel' };

export function isWebviewMessage(m: unknown): m is WebviewToHost {
  if (!m || typeof m !== 'object') return false;
  const t = (m as { type?: unknown }).type;
  return typeof t === 'string' && ['ready', 'openLocation', 'openRound', 'diffRound', 'saveProject', 'command'].includes(t);
}

/** The editor shows one decimal. */
export const pct = (x: number | null | undefined): string => formatPct(x, 1);

/** An inline SVG line chart of overall coverage per round (0..100%). */
export function coverageChartSvg(values: Array<number | null>, width = 360, height = 140): string {
  const pad = 28;
  const n = values.length;
  const x = (i: number): number => pad + (n <= 1 ? (width - 2 * pad) / 2 : (i * (width - 2 * pad)) / (n - 1));
  const y = (v: number): number => height - pad - v * (height - 2 * pad);
  const grid = [0, 0.5, 1]
    .map(
      (g) =>
        `<line class="grid" x1="${pad}" x2="${width - pad}" y1="${y(g)}" y2="${y(g)}"/><text class="axis" x="2" y="${y(g) + 4}">${g * 100}%</text>`,
    )
    .join('');
  const pts = values.map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`));
  const path = pts.filter(Boolean).join(' ');
  const dots = values
    .map((v, i) =>
      v === null
        ? `<text class="fail" x="${x(i) - 3}" y="${y(0) - 4}">×</text>`
        : `<circle class="dot" cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3.5"><title>round ${i + 1}: ${pct(v)}</title></circle>`,
    )
    .join('');
  const labels = values.map((_, i) => `<text class="axis" x="${x(i) - 3}" y="${height - 8}">${i + 1}</text>`).join('');
  return `<svg class="chart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="coverage per round">${grid}<polyline class="line" points="${path}"/>${dots}${labels}</svg>`;
}
