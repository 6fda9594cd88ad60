// Typed messages between the dashboard webview (webview/main.ts) and the extension host
// (src/extension/views/dashboard.ts). It lives beside the webview, and both sides compile against
// it; it holds types and pure helpers only (no vscode, no DOM, no zod: the host alone checks
// messages, in src/extension/views/webviewHost.ts, so the webview bundle does not carry a schema
// library).
import type { CoverageFigures, UncoveredPoint } from '../src/core/run/types.js';
import type { ProjectFile } from '../src/core/run/types.js';
import { pct as formatPct } from '../src/core/run/frontEnd.js';

/** The project file (`chorus.json`): defined with the design types, shared with the webview. */
export type { ProjectFile };

export interface RoundView {
  sample: number;
  round: number;
  status: string;
  /** Passed: it simulated and broke none of the design's assertions (what every view shows). */
  verdict: { passed: boolean; failure?: string };
  coverage: CoverageFigures | null;
  uncovered: UncoveredPoint[];
  errors: number;
  notes: string[];
  hasTestbench: boolean;
  lines: number;
}

/** A round's verdict in a word, one wording for every view (Runs view, progress, dashboard): a run
 * that broke the design's assertions failed, whatever ran; a round stopped by Cancel says so. */
export function roundVerdictWord(r: { verdict?: { passed: boolean }; status: string; errMsg?: string }): string {
  if (r.verdict?.passed ?? r.status === 'success') return 'passed';
  if (r.status === 'exception' && r.errMsg?.trim() === 'cancelled') return 'cancelled';
  return r.status === 'success' ? 'failed (assertions)' : r.status;
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
  /** The run folder (log, coverage report, JUnit), as the CLI writes it; null: none. */
  runFolder: { dir: string; log: string | null; report: string | null; junit: string | null } | null;
  /** The score mode that named the figure (`paper`, `legal`). */
  score: string;
}

/** The files of a run folder a view opens. */
export const RUN_FILES = ['log', 'report', 'junit'] as const;
export type RunFile = (typeof RUN_FILES)[number];

/** The scored figure's name, as every view says it. */
export function scoreName(score: string): string {
  return `coverage (${score}: block+toggle)`;
}

export interface ProjectView {
  path: string | null;
  project: ProjectFile | null;
  /** Set when the file exists but does not parse. */
  error?: string;
}

/** The dashboard's buttons, each the command of the same name. */
export const DASHBOARD_COMMANDS = ['generate', 'runCoverage', 'selectModel', 'cancel'] as const;
export type DashboardCommand = (typeof DASHBOARD_COMMANDS)[number];

export interface DashboardState {
  runs: RunView[];
  project: ProjectView;
}

// The messages, as in Continue's protocol files: message type -> [payload, response]. One map per
// direction; the helpers below and the host's dispatcher (views/webviewHost.ts) take their types
// from it, and webviewHost.ts checks every incoming payload against a zod schema that must agree
// with it.

/** Host -> webview. The webview answers none of them (response `void`). */
export type ToWebview = {
  /** The whole view: sent on `ready`, after every history change and after a save. */
  state: [DashboardState, void];
};

/** Webview -> host. Those answered with `void` are `post`ed; the others are `request`s. */
export type FromWebview = {
  ready: [void, void];
  openLocation: [{ file: string; line: number }, void];
  openRound: [{ runId: string; index: number }, void];
  diffRound: [{ runId: string; index: number }, void];
  /** Opens a file of the run's folder: the log or JUnit as text, the coverage report as a page. */
  openRunFile: [{ runId: string; file: RunFile }, void];
  /** Answers what was saved (`saved /x/chorus.json`); a failure is an error response. */
  saveProject: [{ path: string | null; project: ProjectFile }, string];
  command: [{ command: DashboardCommand }, void];
};

/** A payload as arguments: none for a `void` payload. */
export type PayloadArgs<P> = [P] extends [void] ? [] : [P];

/** The FromWebview types whose response is `void`: fire and forget. */
export type PostedFromWebview = { [K in keyof FromWebview]: [FromWebview[K][1]] extends [void] ? K : never }[keyof FromWebview];

/** On the wire, webview -> host: `id` is set when the webview waits for the response. */
export type WebviewMessage = {
  [K in keyof FromWebview]: { type: K; id?: number; data?: FromWebview[K][0] };
}[keyof FromWebview];

/** The answer to a request, matched by its `id`. */
export type WebviewResponse =
  { type: 'response'; id: number; ok: true; data?: unknown } | { type: 'response'; id: number; ok: false; error: string };

/** On the wire, host -> webview: a ToWebview message or a response. */
export type HostMessage = { [K in keyof ToWebview]: { type: K; data: ToWebview[K][0] } }[keyof ToWebview] | WebviewResponse;

export interface WebviewMessenger {
  post<K extends PostedFromWebview>(type: K, ...data: PayloadArgs<FromWebview[K][0]>): void;
  request<K extends keyof FromWebview>(type: K, ...data: PayloadArgs<FromWebview[K][0]>): Promise<FromWebview[K][1]>;
  /** Settles the request that `m` answers: true when `m` was a response (the caller handles the rest). */
  settle(m: HostMessage): boolean;
}

/** The webview's typed end: `send` is acquireVsCodeApi().postMessage. */
export function webviewMessenger(send: (m: WebviewMessage) => void): WebviewMessenger {
  let nextId = 1;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  return {
    post(type, ...data) {
      send({ type, data: data[0] } as WebviewMessage);
    },
    request<K extends keyof FromWebview>(type: K, ...data: PayloadArgs<FromWebview[K][0]>): Promise<FromWebview[K][1]> {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve: (v) => resolve(v as FromWebview[K][1]), reject });
        send({ type, id, data: data[0] } as WebviewMessage);
      });
    },
    settle(m) {
      if (m.type !== 'response') return false;
      const p = pending.get(m.id);
      if (!p) return true;
      pending.delete(m.id);
      if (m.ok) p.resolve(m.data);
      else p.reject(new Error(m.error));
      return true;
    },
  };
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
