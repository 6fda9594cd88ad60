// Unit tests of the editor adapters with `vscode` replaced by a small fake.
import { describe, expect, it, vi, beforeEach } from 'vitest';

vi.mock('vscode', () => import('./fakeVscode.js'));

import * as fake from './fakeVscode.js';
import { groupDiagnostics, toVscodeDiagnostic } from '../../../src/extension/diagnostics.js';
import { generateSettings, modelConfig, workerEnv, SECRET_API_KEY } from '../../../src/extension/config.js';
import { dashboardHtml } from '../../../src/extension/views/dashboard.js';
import type { Diagnostic, SimResult } from '../../../src/core/sim/result.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../helpers.js';

const diag = (o: Partial<Diagnostic>): Diagnostic => ({
  file: 'tb.sv',
  origin: 'testbench',
  line: 4,
  column: 42,
  severity: 'error',
  message: 'Pin not found',
  stage: 'lint',
  ...o,
});

beforeEach(() => fake.settings.clear());

describe('diagnostics', () => {
  it('maps 1-based line/column (and the underline) to a 0-based range', () => {
    const d = toVscodeDiagnostic(diag({ endColumn: 48, code: 'PINNOTFOUND', suggestion: "'en'" })) as unknown as fake.Diagnostic;
    expect(d.range.start).toEqual({ line: 3, character: 41 });
    expect(d.range.end).toEqual({ line: 3, character: 47 });
    expect(d.severity).toBe(fake.DiagnosticSeverity.Error);
    expect(d.code).toBe('PINNOTFOUND');
    expect(d.source).toBe('CHORUS');
    expect(d.message).toContain("suggestion: 'en'");
  });
  it('groups testbench messages on the testbench file and DUT messages on the design path', () => {
    const g = groupDiagnostics(
      [
        diag({}),
        diag({ file: '/w/counter.sv', origin: 'dut', severity: 'warning' }),
        diag({ file: 'sub/x.sv', origin: 'dut', severity: 'info' }),
      ],
      'tb.sv',
      '/w/tb_counter_1.sv',
      '/w',
    );
    expect([...g.keys()].sort()).toEqual(['/w/counter.sv', '/w/sub/x.sv', '/w/tb_counter_1.sv']);
    expect((g.get('/w/counter.sv')![0] as unknown as fake.Diagnostic).severity).toBe(fake.DiagnosticSeverity.Warning);
  });
});

describe('settings', () => {
  it('defaults to the model-free generator and the documented generation settings', async () => {
    expect(await modelConfig(new fake.SecretStore() as never)).toBeNull();
    const s = generateSettings();
    expect(s).toMatchObject({
      // refinement rounds after the first generation, as `chorus generate --rounds` (4 attempts)
      rounds: 3,
      samples: 1,
      coverageTarget: 100,
      instance: 'uut',
      history: 'markov',
      simulator: 'verilator',
      temperature: 0.7,
      topP: 0.8,
      maxNewTokens: 16384,
    });
    expect(s.limits).toEqual({ timeoutS: 60, buildTimeoutS: 300 });
  });
  it('reads the OpenAI endpoint from settings and the API key from the secret store only', async () => {
    fake.settings.set('chorus.model.source', 'openai');
    fake.settings.set('chorus.model.endpoint', 'http://127.0.0.1:9/v1');
    fake.settings.set('chorus.model.name', 'm');
    fake.settings.set('chorus.apiKey', 'from-settings-must-be-ignored');
    const secrets = new fake.SecretStore();
    await secrets.store(SECRET_API_KEY, 'sk-secret');
    expect(await modelConfig(secrets as never)).toEqual({
      kind: 'openai',
      baseUrl: 'http://127.0.0.1:9/v1',
      model: 'm',
      apiKey: 'sk-secret',
      timeoutMs: 600_000,
    });
  });
  it('reads a local model with its engine and KV cache type (auto by default, an unknown value read as auto)', async () => {
    fake.settings.set('chorus.model.source', 'local');
    fake.settings.set('chorus.model.localPath', '/models/chorus-4b');
    expect(await modelConfig(new fake.SecretStore() as never)).toEqual({
      kind: 'local',
      modelDir: '/models/chorus-4b',
      dtype: 'q4',
      allowDownload: false,
      engine: 'auto',
      kvCache: 'auto',
    });
    fake.settings.set('chorus.model.kvCache', 'q8_0');
    expect(await modelConfig(new fake.SecretStore() as never)).toMatchObject({ kvCache: 'q8_0' });
    fake.settings.set('chorus.model.kvCache', 'q4');
    expect(await modelConfig(new fake.SecretStore() as never)).toMatchObject({ kvCache: 'auto' });
    // the setting the editor shows offers the same choices, auto first and the default
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'));
    const setting = pkg.contributes.configuration.properties['chorus.model.kvCache'];
    expect(setting).toMatchObject({ enum: ['auto', 'f16', 'q8_0'], default: 'auto' });
    expect(setting.enumDescriptions).toHaveLength(3);
  });
  it('says what to do when a model source is chosen but not configured', async () => {
    fake.settings.set('chorus.model.source', 'local');
    await expect(modelConfig(new fake.SecretStore() as never)).rejects.toThrow(/Select Model/);
  });
  it('reads a value outside its range as the default, maps percent targets and simulator paths', () => {
    // -1 is below the setting's minimum (VS Code marks it in the settings editor): the default runs
    fake.settings.set('chorus.generation.rounds', -1);
    fake.settings.set('chorus.generation.coverageTarget', 90);
    fake.settings.set('chorus.generation.historyMode', 'full');
    fake.settings.set('chorus.simulator.verilatorPath', '/opt/v/bin/verilator');
    expect(generateSettings()).toMatchObject({ rounds: 3, coverageTarget: 90, history: 'full' });
    fake.settings.set('chorus.generation.rounds', 2);
    fake.settings.set('chorus.generation.coverageTarget', 150);
    expect(generateSettings()).toMatchObject({ rounds: 2, coverageTarget: 100 });
    expect(workerEnv()).toEqual({ CHORUS_VERILATOR: '/opt/v/bin/verilator' });
  });
});

describe('dashboard html', () => {
  it('has a strict CSP: no inline script without the nonce, only the bundled script and stylesheet', () => {
    const webview = { cspSource: 'vscode-resource:', asWebviewUri: (u: fake.Uri) => u };
    const html = dashboardHtml(webview as never, fake.Uri.file('/ext') as never, 'NONCE123');
    const csp = /content="([^"]+)"/.exec(html)![1];
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'nonce-NONCE123'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    const scripts = [...html.matchAll(/<script[^>]*>/g)].map((m) => m[0]);
    expect(scripts).toHaveLength(1);
    expect(scripts[0]).toContain('nonce="NONCE123"');
    expect(scripts[0]).toContain('/ext/dist/webview.js');
  });
});

describe('a testbench run in the editor passes only at the coverage target', () => {
  it('success below the target ran but has not passed; at the target it passed; a failed run did neither', async () => {
    const { verdict } = await import('../../../src/extension/commands/coverage.js');
    const at = (overall: number, status = 'success'): SimResult =>
      ({
        status,
        stage: status === 'success' ? 'success' : 'build',
        err_msg: status === 'success' ? '' : 'tb.sv:3: syntax error',
        diagnostics: [],
        coverage: { waived: { overall, block: overall, toggle: overall, line: overall, branch: overall } },
      }) as unknown as SimResult;
    const low = verdict(at(0.625), 90);
    expect(low).toMatchObject({ ran: true, passed: false });
    expect(low.summary).toMatch(/below the 90\.0+% target/);
    expect(verdict(at(0.9), 90)).toMatchObject({ ran: true, passed: true });
    expect(verdict(at(1, 'xrun_failed'), 0)).toMatchObject({
      ran: false,
      passed: false,
      summary: 'xrun_failed at build: tb.sv:3: syntax error',
    });
    // Coverage reached by breaking the design's assertions is a failed run in every score mode.
    const illegal = at(1);
    illegal.dutAssertions = [
      { file: '/d/fifo.sv', line: 44, kind: 'assertion', message: 'push while full', count: 3048, firstTime: '125 ns', lastTime: '9 us' },
    ];
    const v = verdict(illegal, 100);
    expect(v).toMatchObject({ ran: true, passed: false });
    expect(v.summary).toMatch(/failed: the stimulus broke the design's assertions 3,048 times, first at fifo\.sv:44 at 125 ns/);
  });
});
