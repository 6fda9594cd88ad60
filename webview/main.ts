// The dashboard UI (runs in the webview): run history, coverage per round, per-type breakdown,
// uncovered points (click: jump to the line), each round's testbench and diff, the project file.
// Talks to the extension host only through the typed messages of protocol.ts.
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-divider/index.js';
import '@vscode-elements/elements/dist/vscode-label/index.js';
import {
  coverageChartSvg,
  pct,
  roundVerdictWord,
  RUN_FILES,
  scoreName,
  webviewMessenger,
  type DashboardCommand,
  type HostMessage,
  type ProjectFile,
  type ProjectView,
  type RunFile,
  type RunView,
} from './protocol.js';

const RUN_FILE_LABEL: Record<RunFile, string> = { log: 'Log', report: 'Coverage report', junit: 'JUnit' };

declare function acquireVsCodeApi(): { postMessage(m: unknown): void; getState(): unknown; setState(s: unknown): void };
const vscode = acquireVsCodeApi();
const { post, request, settle } = webviewMessenger((m) => vscode.postMessage(m));

let runs: RunView[] = [];
let project: ProjectView = { path: null, project: null };
let selected: string | null = (vscode.getState() as { selected?: string } | undefined)?.selected ?? null;
let projectNote = '';

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, html = ''): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.innerHTML = html;
  return e;
}

/** A bar as SVG attributes: the CSP allows no inline style attributes. */
function meter(x: number | null): string {
  const w = x === null ? 0 : Math.round(120 * x);
  return `<svg class="meter" width="120" height="8" aria-hidden="true"><rect class="meter-bg" width="120" height="8"/><rect class="meter-fg" width="${w}" height="8"/></svg>`;
}

function runLabel(r: RunView): string {
  const t = new Date(r.startedAt).toLocaleTimeString();
  return `${t} · ${r.kind} · ${r.top || '?'}`;
}

function render(): void {
  const app = document.getElementById('app')!;
  app.innerHTML = '';
  const bar = el('div', { class: 'toolbar' });
  const btn = (label: string, command: DashboardCommand, secondary = true): void => {
    const b = el('vscode-button', secondary ? { secondary: '' } : {}, esc(label));
    b.addEventListener('click', () => post('command', { command }));
    bar.appendChild(b);
  };
  btn('Generate Testbench', 'generate', false);
  btn('Run Coverage', 'runCoverage');
  btn('Select Model', 'selectModel');
  btn('Cancel', 'cancel');
  app.appendChild(el('h1', {}, 'CHORUS Dashboard'));
  app.appendChild(bar);

  if (!runs.length)
    app.appendChild(el('p', { class: 'muted', id: 'empty' }, 'No runs yet. Generate a testbench for a design to see its rounds here.'));
  else {
    const layout = el('div', { class: 'layout' });
    const list = el('ul', { class: 'runs', id: 'runs' });
    if (!selected || !runs.some((r) => r.id === selected)) selected = runs[0].id;
    for (const r of runs) {
      const best = r.best !== null ? r.rounds[r.best]?.coverage?.overall : null;
      const li = el(
        'li',
        { class: r.id === selected ? 'selected' : '', 'data-id': r.id, tabindex: '0' },
        `<span>${esc(runLabel(r))}</span> <span class="state ${esc(r.state)}">${esc(r.state)}</span> <span class="cov">${pct(best)}</span>`,
      );
      li.addEventListener('click', () => {
        selected = r.id;
        vscode.setState({ selected });
        render();
      });
      list.appendChild(li);
    }
    layout.appendChild(list);
    layout.appendChild(runDetail(runs.find((r) => r.id === selected)!));
    app.appendChild(layout);
  }
  app.appendChild(el('vscode-divider'));
  app.appendChild(projectEditor());
}

function runDetail(r: RunView): HTMLElement {
  const d = el('section', { class: 'detail', id: 'run-detail' });
  const best = r.best !== null ? r.rounds[r.best] : null;
  // One figure, named: the scored figure every view shows, and the verdict every view agrees on.
  const verdict = best ? (best.verdict.passed ? 'passed' : `failed${best.verdict.failure ? `: ${best.verdict.failure}` : ''}`) : '';
  d.appendChild(
    el(
      'div',
      { class: 'summary' },
      `<div><span class="label">Best ${esc(scoreName(r.score))}</span><span class="big" id="best-coverage">${pct(best?.coverage?.overall)}</span></div>
       ${best ? `<div><span class="label">Verdict</span><span id="run-verdict" class="${best.verdict.passed ? 'passed' : 'failed'}">${esc(verdict)}</span></div>` : ''}
       <div><span class="label">Design</span>${esc(r.top || '?')}</div>
       <div><span class="label">Model</span><span id="run-model">${esc(r.model)}</span></div>
       <div><span class="label">Simulator</span>${esc(r.simulator)}</div>
       <div><span class="label">State</span>${esc(r.state)}${r.message ? ` — ${esc(r.message)}` : ''}</div>
       ${r.testbenchPath ? `<div><span class="label">Testbench</span><a href="#" id="open-tb">${esc(r.testbenchPath)}</a></div>` : ''}
       ${r.runFolder ? `<div><span class="label">Run folder</span><span id="run-folder">${esc(r.runFolder.dir)}</span></div>` : ''}`,
    ),
  );
  d.querySelector('#open-tb')?.addEventListener('click', (e) => {
    e.preventDefault();
    post('openLocation', { file: r.testbenchPath!, line: 1 });
  });
  if (r.runFolder) {
    const files = el('div', { class: 'toolbar', id: 'run-files' });
    for (const f of RUN_FILES) {
      if (!r.runFolder[f]) continue;
      const b = el('vscode-button', { secondary: '', 'data-file': f }, esc(RUN_FILE_LABEL[f]));
      b.addEventListener('click', () => post('openRunFile', { runId: r.id, file: f }));
      files.appendChild(b);
    }
    d.appendChild(files);
  }
  if (r.rounds.length) {
    d.appendChild(el('h2', {}, 'Coverage per round'));
    d.appendChild(el('div', { class: 'chart-box' }, coverageChartSvg(r.rounds.map((x) => x.coverage?.overall ?? null))));
  }
  if (best?.coverage) {
    const c = best.coverage;
    d.appendChild(el('h2', {}, `Breakdown (round ${best.round + 1}; the score is the mean of block and toggle)`));
    const rows = (['block', 'line', 'branch', 'toggle', 'user'] as const)
      .map((k) => {
        const t = c.tallies[k];
        return `<tr data-type="${k}"><td>${k}</td><td>${pct(c[k])}</td><td>${t.covered}/${t.total}</td><td>${meter(c[k])}</td></tr>`;
      })
      .join('');
    d.appendChild(
      el(
        'table',
        { class: 'breakdown', id: 'breakdown' },
        `<thead><tr><th>type</th><th>coverage</th><th>points</th><th></th></tr></thead><tbody>${rows}</tbody>`,
      ),
    );
  }
  if (r.rounds.length) {
    d.appendChild(el('h2', {}, 'Rounds'));
    const t = el(
      'table',
      { class: 'rounds', id: 'rounds' },
      '<thead><tr><th>#</th><th>verdict</th><th>coverage</th><th>errors</th><th>testbench</th></tr></thead>',
    );
    const body = el('tbody');
    r.rounds.forEach((x, i) => {
      const tr = el(
        'tr',
        i === r.best ? { class: 'best' } : {},
        `<td>${x.sample ? `s${x.sample + 1} ` : ''}${x.round + 1}</td><td>${esc(roundVerdictWord(x))}</td><td>${pct(x.coverage?.overall)}</td><td>${x.errors}</td><td></td>`,
      );
      const cell = tr.lastElementChild!;
      if (x.hasTestbench) {
        const open = el('vscode-button', { secondary: '' }, `Open (${x.lines} lines)`);
        open.addEventListener('click', () => post('openRound', { runId: r.id, index: i }));
        cell.appendChild(open);
        if (i > 0) {
          const diff = el('vscode-button', { secondary: '' }, 'Diff vs previous');
          diff.addEventListener('click', () => post('diffRound', { runId: r.id, index: i }));
          cell.appendChild(diff);
        }
      }
      if (x.notes.length) tr.title = x.notes.join('\n');
      body.appendChild(tr);
    });
    t.appendChild(body);
    d.appendChild(t);
  }
  if (best && best.uncovered.length) {
    d.appendChild(el('h2', {}, `Uncovered points (${best.uncovered.length}${best.uncovered.length >= 100 ? '+' : ''})`));
    const ul = el('ul', { class: 'uncovered', id: 'uncovered' });
    for (const u of best.uncovered) {
      // Where the point's code is (an `else` arm's body, not its `if`): the line its source text comes from.
      const at = u.type !== 'toggle' && u.span ? u.span[0] : u.line;
      const li = el(
        'li',
        { tabindex: '0' },
        `<span class="type ${u.type}">${u.type}</span> <a href="#">${esc(u.file.split('/').pop() ?? u.file)}:${at}</a> <b>${esc(u.label)}</b>${u.source ? ` <code>${esc(u.source)}</code>` : ''}${u.reason ? ` <span class="reason">${esc(reasonText(u.reason))}</span>` : ''} <span class="muted">${esc(u.hier)}</span>`,
      );
      const go = (e: Event): void => {
        e.preventDefault();
        post('openLocation', { file: u.file, line: at });
      };
      li.querySelector('a')!.addEventListener('click', go);
      li.addEventListener('keydown', (e) => e.key === 'Enter' && go(e));
      ul.appendChild(li);
    }
    d.appendChild(ul);
  }
  return d;
}

/** Why a point is uncovered, in the words the CLI prints. */
function reasonText(r: NonNullable<RunView['rounds'][number]['uncovered'][number]['reason']>): string {
  const kind = {
    'not-hit': 'not reached',
    'dead-param': 'parameter-dead',
    'unreachable-formal': 'proven unreachable (formal)',
    witness: 'witness found, not yet covered',
    bounded: 'not reached in a bounded search',
  }[r.kind];
  return r.kind === 'not-hit' ? kind : `${kind}${r.enable ? ` (enable with ${r.enable})` : ''}: ${r.detail}`;
}

const LIST_FIELDS = ['files', 'fileLists', 'includeDirs', 'defines', 'params'] as const;

function projectEditor(): HTMLElement {
  const s = el('section', { class: 'project', id: 'project' });
  s.appendChild(el('h2', {}, 'Project file'));
  if (!project.path) {
    s.appendChild(
      el('p', { class: 'muted' }, 'No design yet: the project file (chorus.json beside the design) appears after the first run.'),
    );
    return s;
  }
  s.appendChild(
    el(
      'p',
      { class: 'muted' },
      `${esc(project.path)}${project.project ? '' : ' (not created yet: Save creates it)'}${project.error ? ` — <span class="error">${esc(project.error)}</span>` : ''}`,
    ),
  );
  const p: ProjectFile = project.project ?? { files: [] };
  const form = el('div', { class: 'form' });
  const fields: Record<string, HTMLInputElement> = {};
  const add = (key: string, label: string, value: string, hint: string): void => {
    const row = el('div', { class: 'row' });
    row.appendChild(el('vscode-label', { for: `f-${key}` }, esc(label)));
    const input = el('vscode-textfield', { id: `f-${key}`, placeholder: hint }) as unknown as HTMLInputElement;
    input.value = value;
    fields[key] = input;
    row.appendChild(input as unknown as HTMLElement);
    form.appendChild(row);
  };
  add('files', 'Files', p.files.join(', '), 'comma-separated, relative to the project file');
  add('fileLists', 'File lists (-f)', (p.fileLists ?? []).join(', '), 'files.f');
  add('includeDirs', 'Include dirs', (p.includeDirs ?? []).join(', '), 'include');
  add('defines', 'Defines', (p.defines ?? []).join(', '), 'NAME or NAME=VALUE');
  add('params', 'Parameters', (p.params ?? []).join(', '), 'NAME=VALUE');
  add('top', 'Top module', p.top ?? '', 'needed when several top candidates');
  s.appendChild(form);
  const save = el('vscode-button', { id: 'save-project' }, 'Save project');
  save.addEventListener('click', () => {
    const list = (k: string): string[] =>
      fields[k].value
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
    const out: ProjectFile = { files: list('files') };
    for (const k of LIST_FIELDS.slice(1)) {
      const v = list(k);
      if (v.length) out[k] = v;
    }
    const top = fields.top.value.trim();
    if (top) out.top = top;
    const note = (text: string): void => {
      projectNote = text;
      render();
    };
    request('saveProject', { path: project.path, project: out }).then(note, (e: Error) => note(e.message));
  });
  s.appendChild(save);
  if (projectNote) s.appendChild(el('p', { id: 'project-note' }, esc(projectNote)));
  return s;
}

window.addEventListener('message', (e: MessageEvent<HostMessage>) => {
  const m = e.data;
  if (settle(m)) return;
  if (m.type === 'state') {
    runs = m.data.runs;
    project = m.data.project;
  }
  render();
});

render();
post('ready');
