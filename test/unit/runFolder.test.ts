// The run folder's pieces without a simulator: output checks, the junit and HTML writers' escaping,
// the design's $readmem names, the build memory hint.
import { describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { coverageHtml, escapeHtml, junitXml, openRunFolder, outOfMemoryHint, outputProblem } from '../../src/core/run/runFolder.js';
import { readmemCalls } from '../../src/core/sim/verilator/stages/dataFiles.js';
import type { SimResult } from '../../src/core/sim/result.js';
import { StageProgress, StatusLine } from '../../src/cli/progress.js';
import { scratchDir } from '../helpers.js';

describe('output checks', () => {
  it('says why a path cannot be written', () => {
    const d = scratchDir();
    writeFileSync(join(d, 'f'), 'x');
    expect(outputProblem(join(d, 'f', 'g'), 'dir')).toMatch(/f is a file, not a folder/);
    expect(outputProblem(join(d, 'f'), 'dir')).toMatch(/is a file, not a folder/);
    expect(outputProblem(join(d, 'f'), 'file')).toMatch(/exists; choose another --out or pass --force/);
    expect(outputProblem(join(d, 'f'), 'file', true)).toBeUndefined();
    expect(outputProblem(d, 'file', true)).toMatch(/is a folder, not a file/);
    expect(outputProblem(join(d, 'new', 'deeper'), 'dir')).toBeUndefined();
  });

  it('run folders are new each time and `latest` points at the newest', () => {
    const d = scratchDir();
    const now = new Date(2026, 0, 2, 3, 4, 5);
    const a = openRunFolder(d, 'top/../x', now);
    const b = openRunFolder(d, 'top/../x', now);
    expect(a).toBe(join(d, 'top_.._x', '20260102-030405'));
    expect(b).toBe(join(d, 'top_.._x', '20260102-030405-2'));
    expect(readlinkSync(join(d, 'top_.._x', 'latest'))).toBe('20260102-030405-2');
    // A real folder named latest is never replaced.
    mkdirSync(join(d, 'y', 'latest'), { recursive: true });
    openRunFolder(d, 'y', now);
  });

  it('a run folder root or design folder that is a symbolic link is refused, and nothing is written through it', () => {
    const d = scratchDir();
    const elsewhere = scratchDir();
    symlinkSync(elsewhere, join(d, 'out'));
    expect(() => openRunFolder(join(d, 'out'), 'top')).toThrow(/run folder .*out is a symbolic link; .*--out/);
    mkdirSync(join(d, 'real'));
    symlinkSync(elsewhere, join(d, 'real', 'top'));
    expect(() => openRunFolder(join(d, 'real'), 'top')).toThrow(/design folder .*top is a symbolic link/);
    expect(readdirSync(elsewhere)).toEqual([]);
  });
});

describe('writers', () => {
  it('junit: one testcase per round, failures with the reason, everything escaped', () => {
    const x = junitXml('chorus.t', [
      { name: 'round-1', timeS: 1.5 },
      { name: 'round-2', timeS: 0.25, failure: 'xrun_failed at lint: <"&\'>\nsecond', output: ']]></system-out><x>\u0001' },
    ]);
    expect(x).toContain('<testsuite name="chorus.t" tests="2" failures="1"');
    expect(x).toContain('<failure message="xrun_failed at lint: &lt;&quot;&amp;&apos;&gt;">');
    expect(x).toContain('<system-out>]]&gt;&lt;/system-out&gt;&lt;x&gt;\ufffd</system-out>');
  });

  it('HTML: sources, hits, toggles and reasons, with no markup from the text', () => {
    expect(escapeHtml(`<a href='x'>&"`)).toBe('&lt;a href=&#39;x&#39;&gt;&amp;&quot;');
    const html = coverageHtml({
      title: 't<script>',
      summary: ['overall 50%'],
      sources: [{ file: '/d/m.sv', text: 'module m;\n  assign y = a; // </td><script>x</script>\nendmodule' }],
      points: [
        { type: 'line', file: '/d/m.sv', line: 2, column: 1, module: 'm', hier: 'tb.uut', label: 'block', count: 3 },
        { type: 'toggle', file: '/d/m.sv', line: 2, column: 1, module: 'm', hier: 'tb.uut', label: 'y', count: 0 },
      ],
      uncovered: [
        {
          type: 'toggle',
          file: '/d/m.sv',
          line: 2,
          label: 'y',
          hier: 'tb.uut',
          count: 0,
          reason: { kind: 'unreachable-formal', detail: 'tied <0>' },
        },
      ],
      testbench: { name: 'tb.sv', text: '</pre><script>alert(1)</script>' },
    });
    expect(html).not.toMatch(/<script/i);
    expect(html).toContain('<td class="hits">3</td><td class="tog">0/1</td>');
    expect(html).toContain('toggle y [tb.uut]: unreachable-formal: tied &lt;0&gt;');
    expect(html).toContain("default-src 'none'");
    // Its one miss is proven out of reach: shown as such, not as a miss.
    expect(html).toContain('<tr class="excl" id="f1-L2">');
  });

  it('HTML report: verdict, figures, per-file and per-instance tables, reasons grouped with links, assertions, rounds', () => {
    const pts = (file: string, hier: string) => [
      { type: 'line' as const, file, line: 2, column: 1, module: 'm', hier, label: 'block', count: 3 },
      { type: 'branch' as const, file, line: 3, column: 1, module: 'm', hier, label: 'if', count: 0 },
      { type: 'toggle' as const, file, line: 2, column: 1, module: 'm', hier, label: 'y', count: 1 },
    ];
    const html = coverageHtml({
      title: 'coverage of top',
      summary: ['status: failed (success)'],
      verdict: { passed: false, text: "failed: the stimulus broke the design's assertions 3 times" },
      figures: { scored: 0.5, ceiling: 0.75 },
      sources: [
        { file: '/d/a.sv', text: 'module a;\n  assign y = 1;\n  if (P) x;\nendmodule' },
        { file: '/d/b.sv', text: 'module b;\n  assign y = 1;\n  if (Q) x;\nendmodule' },
      ],
      points: [...pts('/d/a.sv', 'tb.uut'), ...pts('/d/b.sv', 'tb.uut.u_b')],
      uncovered: [
        {
          type: 'branch',
          file: '/d/b.sv',
          line: 3,
          label: 'if',
          hier: 'tb.uut.u_b',
          count: 0,
          reason: { kind: 'dead-param', detail: 'false with Q = 0', enable: '-G Q=1' },
        },
        {
          type: 'branch',
          file: '/d/a.sv',
          line: 3,
          label: 'if',
          hier: 'tb.uut',
          count: 0,
          reason: { kind: 'not-hit', detail: 'not reached' },
        },
      ],
      assertions: [{ file: '/d/a.sv', line: 2, kind: 'assertion', message: 'bad <x>', count: 3, firstTime: '5 ns', lastTime: '25 ns' }],
      rounds: [{ label: 'round-1', status: 'failed', coverage: 0.5, note: "the design's assertions fired" }],
    });
    expect(html).toMatch(/<p class="verdict fail" id="verdict">failed: /);
    expect(html).toContain('scored 50.00%; reachable ceiling 75.00%');
    // One row per file plus the total, one per instance; each file row links to its section.
    const fileTable = html.slice(html.indexOf('id="file-table"'), html.indexOf('</table>', html.indexOf('id="file-table"')));
    expect(fileTable.match(/<tr><td>/g)).toHaveLength(3);
    expect(fileTable).toContain('<a href="#f2">/d/b.sv</a>');
    const instTable = html.slice(html.indexOf('id="instance-table"'), html.indexOf('</table>', html.indexOf('id="instance-table"')));
    expect(instTable.match(/<tr><td>/g)).toHaveLength(2);
    expect(html).toContain('id="f1"');
    expect(html).toContain('id="f2-L3"');
    // Reasons grouped, each point linking to its line, the -G that enables a dead region.
    expect(html).toMatch(/Dead under the chosen parameters[^<]*: 1<\/h3>/);
    expect(html).toContain('<a href="#f2-L3">b.sv:3</a>');
    expect(html).toContain('enable: -G Q=1');
    // The assertions as a failure, escaped.
    expect(html).toMatch(/fired 3 times at 1 site: the stimulus broke the design's own checks, so the run failed/);
    expect(html).toContain('bad &lt;x&gt;');
    expect(html).toContain('<td>round-1</td><td>failed</td><td>50.00%</td>');
  });
});

describe('design data files', () => {
  it('finds the literal names of $readmemh/$readmemb, not those in comments', () => {
    const calls = readmemCalls('/d/m.sv', '// $readmemh("no.hex", m);\ninitial begin\n  $readmemb ( "data/a.bin" , m);\nend\n');
    expect(calls).toEqual([{ file: '/d/m.sv', line: 3, column: 3, task: 'readmemb', name: 'data/a.bin' }]);
  });

  it('a build out of memory says how much and which option raises it', () => {
    const r = { diagnostics: [{ code: 'CHORUS-OOM' }] } as unknown as SimResult;
    expect(outOfMemoryHint(r, 4096)).toBe('Verilator needed more than 4.0 GB to build this design; raise it with --memory-limit');
    expect(outOfMemoryHint({ diagnostics: [] } as unknown as SimResult, 4096)).toBeUndefined();
  });
});

describe('progress within a round', () => {
  const fake = (isTTY: boolean) => {
    const out: string[] = [];
    return { out, stream: { isTTY, columns: 80, write: (s: string) => out.push(s) } as unknown as NodeJS.WriteStream };
  };

  it('plain lines in a log for a stage that runs long; the redrawn line with elapsed time on a terminal', () => {
    const log = fake(false);
    const p = new StageProgress(new StatusLine(log.stream), log.stream, 0);
    p.setLabel('round 2/4');
    p.onStage('build');
    p.stop();
    expect(log.out.join('')).toBe('round 2/4: still building after 0s\n');

    const tty = fake(true);
    const q = new StageProgress(new StatusLine(tty.stream), tty.stream);
    q.setLabel('round 1/4');
    q.onStage('run');
    q.stop();
    expect(tty.out.join('')).toContain('round 1/4: running (0s)');
  });
});
