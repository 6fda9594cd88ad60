// The extension in a real VS Code (code-server 4.100.3 = VS Code 1.100.3) driven by Chromium:
// install the VSIX (globalSetup.ts packages it once) offline, open a copy of examples/, and run
// the commands as a user would (F1). Screenshots of every step go to test-results/e2e/. Runs only
// under vitest.e2e.config.ts (npm run test:e2e), which sets CHORUS_E2E=1. The first six tests
// build on each other (tb_counter_1.sv); the later ones each start from a folder of their own.
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { chorusVsix, openSession, ROOT, waitFor, Workbench, type Session } from './harness.js';
import { fencedReply, startScriptedServer, type ScriptedServer } from '../support/scriptedServer.js';
import { keepModuleName } from '../../src/core/run/refinement.js';

const enabled = process.env.CHORUS_E2E === '1';

describe.skipIf(!enabled)('VS Code extension in code-server', () => {
  let session: Session;
  let vsixDir = '';
  let ws = '';
  let page: Page;
  let wb: Workbench;
  const servers: ScriptedServer[] = [];
  const counterDir = (): string => join(ws, 'examples/counter');
  const settings = (s: Record<string, unknown>): void => session.settings(s);

  beforeAll(async () => {
    vsixDir = mkdtempSync(join(tmpdir(), 'chorus-e2e-ext-'));
    session = await openSession(chorusVsix(inject('chorusVsix'), vsixDir), { name: 'ext' });
    ({ ws, page, wb } = session);
  });

  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail') await wb?.shot('FAILED').catch(() => undefined);
  });

  afterAll(async () => {
    await session?.close();
    for (const s of servers) await s.close().catch(() => undefined);
    rmSync(vsixDir, { recursive: true, force: true });
  });

  it('generates a testbench with the model-free generator (F1)', async () => {
    await wb.openFile('examples/counter/counter.sv');
    // The extension activates on the language / workspace contents: its status item appears.
    await page.locator('.statusbar-item', { hasText: 'CHORUS' }).first().waitFor({ timeout: 60_000 });
    await wb.shot('design-open');
    await wb.command('CHORUS: Generate Testbench');
    await wb.toast('generating testbench', 30_000).catch(() => undefined);
    await wb.shot('generating');
    const tb = join(counterDir(), 'tb_counter_1.sv');
    await waitFor('tb_counter_1.sv on disk', () => existsSync(tb), 240_000);
    await page.locator('.tabs-container .tab', { hasText: 'tb_counter_1.sv' }).first().waitFor({ timeout: 30_000 });
    expect(readFileSync(tb, 'utf8')).toMatch(/module tb_counter/);
    // The original testbenches are untouched (never overwritten).
    expect(readFileSync(join(counterDir(), 'tb_counter.sv'), 'utf8')).toBe(
      readFileSync(join(ROOT, 'examples/counter/tb_counter.sv'), 'utf8'),
    );
    await page
      .locator('.statusbar-item', { hasText: /CHORUS: \d+\.\d%/ })
      .first()
      .waitFor({ timeout: 30_000 });
    await wb.toast(/tb_counter_1\.sv: coverage/, 30_000);
    await wb.shot('generated');
  });

  it('runs coverage: decorations in the design, result in the status bar', async () => {
    await wb.closeAll();
    await wb.openFile('examples/counter/tb_counter_1.sv');
    await wb.command('CHORUS: Run Coverage');
    await page
      .locator('.notification-toast', { hasText: /tb_counter_1\.sv: coverage/ })
      .first()
      .waitFor({ timeout: 180_000 });
    // The design opens beside with line decorations (gutter marks) for covered/uncovered lines.
    await page
      .locator('.tabs-container .tab', { hasText: /^counter\.sv/ })
      .first()
      .waitFor({ timeout: 30_000 });
    const marks = await waitFor(
      'coverage gutter decorations',
      async () => (await page.locator('.monaco-editor [class*="ced-"]').count()) || 0,
      30_000,
    );
    expect(marks).toBeGreaterThan(3);
    await wb.shot('coverage-decorations');
  });

  it('puts simulator diagnostics in the Problems panel at the exact position', async () => {
    await wb.closeAll();
    const broken = join(counterDir(), 'tb_broken.sv');
    writeFileSync(
      broken,
      [
        '`timescale 1ns/1ps',
        'module tb_broken;',
        '  logic clk = 0, rst_n = 0;',
        "  counter uut (.clk(clk), .rst_n(rst_n), .enable(1'b1));",
        '  always #5 clk = ~clk;',
        '  initial begin #100 $finish; end',
        'endmodule',
        '',
      ].join('\n'),
    );
    await wb.openFile('examples/counter/tb_broken.sv');
    await wb.command('CHORUS: Run Coverage');
    await page
      .locator('.notification-toast', { hasText: /tb_broken\.sv: xrun_failed|tb_broken\.sv: .*failed/ })
      .first()
      .waitFor({ timeout: 180_000 });
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+Shift+M');
    const problem = page.locator('.markers-panel .monaco-list-row', { hasText: 'enable' }).first();
    await problem.waitFor({ timeout: 30_000 });
    const text = await page.locator('.markers-panel').innerText();
    expect(text).toMatch(/PINNOTFOUND/);
    expect(text).toMatch(/\[Ln 4, Col 4[0-9]\]/);
    await wb.shot('problems');
  });

  it('shows the dashboard and reads the best coverage from it', async () => {
    await wb.closeAll();
    await wb.command('CHORUS: Show Dashboard');
    const dash = wb.dashboard();
    await dash.locator('#runs li').first().waitFor({ timeout: 30_000 });
    await dash.locator('#runs li', { hasText: 'generate' }).first().click();
    const best = await dash.locator('#best-coverage').innerText();
    expect(best).toMatch(/^\d+\.\d%$/);
    expect(await dash.locator('#run-model').innerText()).toContain('model-free');
    expect(await dash.locator('#rounds tbody tr').count()).toBeGreaterThanOrEqual(1);
    await wb.shot('dashboard');
  });

  it('generates with an OpenAI-compatible server (scripted replies)', async () => {
    await wb.closeAll();
    const tbText = readFileSync(join(ROOT, 'examples/counter/tb_counter.sv'), 'utf8');
    const server = await startScriptedServer(
      [
        fencedReply(tbText, 'tb_counter.sv', 'Here is the testbench.\n'),
        fencedReply(tbText, 'tb_counter.sv'),
        fencedReply(tbText, 'tb_counter.sv'),
      ],
      { models: ['chorus-e2e'] },
    );
    servers.push(server);
    settings({
      'chorus.model.source': 'openai',
      'chorus.model.endpoint': server.url,
      'chorus.model.name': 'chorus-e2e',
      'chorus.generation.rounds': 1,
    });
    await page.waitForTimeout(1500);
    await wb.openFile('examples/counter/counter.sv');
    await wb.command('CHORUS: Generate Testbench');
    const tb = join(counterDir(), 'tb_counter_2.sv');
    await waitFor('tb_counter_2.sv on disk', () => existsSync(tb), 240_000);
    expect(server.requests.length).toBeGreaterThanOrEqual(1);
    expect(readFileSync(tb, 'utf8')).toContain('module tb_counter');
    await page.locator('.tabs-container .tab', { hasText: 'tb_counter_2.sv' }).first().waitFor({ timeout: 30_000 });
    await wb.shot('openai-generated');
  });

  it('cancels a long run', async () => {
    await wb.closeAll();
    const server = await startScriptedServer([{ hang: true }, { hang: true }], { models: ['chorus-e2e'] });
    servers.push(server);
    settings({
      'chorus.model.source': 'openai',
      'chorus.model.endpoint': server.url,
      'chorus.model.name': 'chorus-e2e',
      'chorus.generation.rounds': 1,
    });
    await page.waitForTimeout(1500);
    await wb.openFile('examples/counter/counter.sv');
    await wb.command('CHORUS: Generate Testbench');
    await waitFor('the model request', () => server.requests.length > 0, 60_000);
    await wb.shot('long-run');
    await wb.command('CHORUS: Cancel');
    await wb.toast('generation cancelled', 30_000);
    expect(existsSync(join(counterDir(), 'tb_counter_3.sv'))).toBe(false);
    // The progress ends with the run: nothing keeps saying "generating" after a cancel.
    await page.locator('.statusbar', { hasText: 'generating testbench' }).waitFor({ state: 'detached', timeout: 15_000 });
    await wb.shot('cancelled');
  });

  // ---- Each test below starts from a design folder of its own, so any one runs alone (-t). ----

  /** Copies files of examples/counter into `<workspace>/<dir>` and returns its path. */
  const counterCopy = (dir: string, files: string[]): string => {
    const d = join(ws, dir);
    mkdirSync(d, { recursive: true });
    for (const f of files) copyFileSync(join(ROOT, 'examples/counter', f), join(d, f));
    return d;
  };

  const openaiSettings = (server: ScriptedServer): Record<string, unknown> => ({
    'chorus.model.source': 'openai',
    'chorus.model.endpoint': server.url,
    'chorus.model.name': 'chorus-e2e',
    'chorus.generation.rounds': 1,
  });

  const workspaceSettings = (): Record<string, unknown> => JSON.parse(readFileSync(join(ws, '.vscode/settings.json'), 'utf8'));

  it('refines a testbench in a diff: Reject leaves the file byte-identical, Accept writes the revision', async () => {
    await wb.closeAll();
    await wb.clearNotifications();
    const dir = counterCopy('e2e-refine', ['counter.sv']);
    const tb = join(dir, 'tb_refine.sv');
    copyFileSync(join(ROOT, 'examples/counter/tb_counter_weak.sv'), tb);
    const original = readFileSync(tb);
    // The model's revision: the full testbench of the example (the weak one never loads or counts down).
    const revision = readFileSync(join(ROOT, 'examples/counter/tb_counter.sv'), 'utf8');
    const server = await startScriptedServer(
      Array.from({ length: 4 }, () => fencedReply(revision, 'tb_refine.sv', 'A revision that loads and counts down.\n')),
      { models: ['chorus-e2e'] },
    );
    servers.push(server);
    settings(openaiSettings(server));
    await page.waitForTimeout(1500);

    const refine = async (answer: 'Accept' | 'Reject'): Promise<void> => {
      await wb.closeAll();
      await wb.openFile('e2e-refine/tb_refine.sv');
      await wb.command('CHORUS: Refine Testbench');
      // No result of this testbench yet: CHORUS asks how to get one.
      await wb.pick('Simulate it now');
      const ask = await wb.toast(/accept the revision .* of tb_refine\.sv\?/, 300_000);
      // The diff editor: the file against the revision.
      await page
        .locator('.tabs-container .tab', { hasText: /tb_refine\.sv ↔ CHORUS revision/ })
        .first()
        .waitFor({ timeout: 30_000 });
      await page.locator('.monaco-diff-editor').first().waitFor({ timeout: 30_000 });
      await wb.shot(`refine-diff-before-${answer.toLowerCase()}`);
      await ask.locator('.monaco-button', { hasText: answer }).click();
    };

    await refine('Reject');
    await page
      .locator('.tabs-container .tab', { hasText: /↔ CHORUS revision/ })
      .first()
      .waitFor({ state: 'detached', timeout: 15_000 });
    await page.waitForTimeout(1000);
    expect(readFileSync(tb).equals(original)).toBe(true);
    expect(await page.locator('.tabs-container .tab.dirty').count()).toBe(0);
    await wb.shot('refine-rejected');

    await wb.clearNotifications();
    await refine('Accept');
    const accepted = await waitFor(
      'the revision in tb_refine.sv',
      () => {
        const now = readFileSync(tb, 'utf8');
        return now !== original.toString('utf8') ? now : null;
      },
      30_000,
    );
    // The revision keeps the testbench's module name (the model called it tb_counter).
    const kept = keepModuleName(revision, 'tb_counter_weak').text;
    expect(kept).toMatch(/module tb_counter_weak/);
    expect(accepted).toBe(kept.endsWith('\n') ? kept : `${kept}\n`);
    // The answer closes the diff.
    await page
      .locator('.tabs-container .tab', { hasText: /↔ CHORUS revision/ })
      .first()
      .waitFor({ state: 'detached', timeout: 15_000 });
    expect(server.requests.length).toBe(2);
    await wb.shot('refine-accepted');
  });

  it('selects an OpenAI-compatible endpoint; a bad URL and a silent server are refused with the reason', async () => {
    await wb.closeAll();
    await wb.clearNotifications();
    settings({});
    await page.waitForTimeout(1500);
    const server = await startScriptedServer([], { models: ['chorus-e2e', 'other-model'] });
    servers.push(server);

    // Not a URL: the input box says what it wants and does not close.
    await wb.command('CHORUS: Select Model');
    await wb.pick('OpenAI-compatible endpoint');
    await wb.typeInput('localhost 8000');
    await page.locator('.quick-input-widget', { hasText: 'a URL like http://127.0.0.1:8000/v1' }).waitFor({ timeout: 15_000 });
    await page.keyboard.press('Enter');
    await page.waitForTimeout(500);
    expect(await page.locator('.quick-input-widget', { hasText: 'OpenAI-compatible endpoint' }).isVisible()).toBe(true);
    await wb.shot('select-model-bad-url');

    // A URL where nothing answers: refused with the reason, the settings unchanged.
    await wb.typeInput('http://127.0.0.1:9/v1');
    await page.keyboard.press('Enter');
    await page.locator('.quick-input-widget', { hasText: 'API key' }).waitFor({ timeout: 15_000 });
    await page.keyboard.press('Enter');
    await wb.expandToast(await wb.toast(/127\.0\.0\.1:9\/v1\/models did not answer .*is the server running\?/, 60_000));
    await wb.shot('select-model-no-server');
    expect(workspaceSettings()['chorus.model.source']).toBe('none');

    // A server that answers: its models to pick from, then the settings.
    await wb.clearNotifications();
    await wb.command('CHORUS: Select Model');
    await wb.pick('OpenAI-compatible endpoint');
    await wb.typeInput(server.url);
    await page.keyboard.press('Enter');
    await page.locator('.quick-input-widget', { hasText: 'API key' }).waitFor({ timeout: 15_000 });
    await page.keyboard.press('Enter');
    await page.locator('.quick-input-widget', { hasText: 'served model' }).waitFor({ timeout: 30_000 });
    await wb.shot('select-model-served-models');
    await wb.pick('chorus-e2e');
    await wb.toast(`using chorus-e2e at ${server.url}`, 30_000);
    await wb.shot('select-model-endpoint');
    const s = await waitFor(
      'the model settings',
      () => (workspaceSettings()['chorus.model.source'] === 'openai' ? workspaceSettings() : null),
      15_000,
    );
    expect(s['chorus.model.endpoint']).toBe(server.url);
    expect(s['chorus.model.name']).toBe('chorus-e2e');
    expect(server.requests.length).toBe(0); // choosing a model lists models, it generates nothing
  });

  it('selects a local model folder; a folder without a model is refused with the reason', async () => {
    await wb.closeAll();
    await wb.clearNotifications();
    settings({});
    await page.waitForTimeout(1500);
    const modelDir = join(ws, 'models/tiny-qwen3');
    cpSync(join(ROOT, 'test/fixtures/models/tiny-qwen3'), modelDir, { recursive: true });

    /** `listed`: a subfolder the dialog then lists (it lists folders only). */
    const choose = async (folder: string, listed: string | null): Promise<void> => {
      await wb.command('CHORUS: Select Model');
      await wb.pick('Local model directory');
      // The browser's file dialog: a quick input holding a path. It fills in its start folder
      // once it has listed it, so type the path after that.
      const input = page.locator('.quick-input-widget input');
      await page.locator('.quick-input-widget', { hasText: 'Use this model' }).waitFor({ timeout: 15_000 });
      await page.locator('.quick-input-list .monaco-list-row').first().waitFor({ timeout: 15_000 });
      await waitFor(
        'the path in the file dialog',
        async () => {
          if ((await input.inputValue()) !== `${folder}/`) await wb.typeInput(`${folder}/`);
          await page.waitForTimeout(500);
          return (await input.inputValue()) === `${folder}/`;
        },
        15_000,
      );
      if (listed) await page.locator('.quick-input-list .monaco-list-row', { hasText: listed }).first().waitFor({ timeout: 30_000 });
      else await page.waitForTimeout(1500);
      await wb.shot(`select-model-dialog-${listed ? 'model' : 'designs'}`);
      await page.locator('.quick-input-widget .monaco-button', { hasText: 'Use this model' }).first().click();
      await page.locator('.quick-input-widget', { hasText: 'inference engine' }).waitFor({ timeout: 30_000 });
      await wb.pick('ONNX');
      await page.locator('.quick-input-widget', { hasText: 'model precision' }).waitFor({ timeout: 15_000 });
      await wb.pick('q4');
    };

    // A folder of designs, no model: refused, with the loader's reason.
    await choose(join(ws, 'examples/counter'), null);
    const refused = await wb.toast(/no model loads from counter: Model directory .*examples\/counter lacks config\.json/, 120_000);
    await wb.expandToast(refused);
    await wb.shot('select-model-no-model');
    expect(workspaceSettings()['chorus.model.source']).toBe('none');

    await wb.clearNotifications();
    await choose(modelDir, 'onnx');
    await wb.expandToast(await wb.toast(/CHORUS: loaded .* with ONNX on cpu/, 180_000));
    await wb.shot('select-model-local');
    const s = await waitFor(
      'the model settings',
      () => (workspaceSettings()['chorus.model.source'] === 'local' ? workspaceSettings() : null),
      15_000,
    );
    expect(s['chorus.model.localPath']).toBe(modelDir);
    expect(s['chorus.model.engine']).toBe('onnx');
    expect(s['chorus.model.dtype']).toBe('q4');
  });

  it('opens the walkthrough; its first step opens an example design', async () => {
    await wb.closeAll();
    await wb.clearNotifications();
    await wb.command('CHORUS: Get Started');
    const gs = page.locator('.gettingStartedContainer');
    await gs.getByText('Get started with CHORUS').first().waitFor({ timeout: 30_000 });
    for (const step of ['Open a design', 'Generate a testbench', 'Read the coverage', 'Pick a model'])
      await gs.locator('.getting-started-step', { hasText: step }).first().waitFor({ timeout: 15_000 });
    await wb.shot('walkthrough');
    // A step's media is its markdown (media/walkthrough/*.md), rendered beside the steps.
    await gs.locator('.getting-started-step', { hasText: 'Pick a model' }).first().click();
    const media = page.frameLocator('.gettingStartedContainer iframe.webview.ready').frameLocator('iframe#active-frame');
    await media.getByText('OpenAI-compatible', { exact: false }).first().waitFor({ timeout: 30_000 });
    await wb.shot('walkthrough-model-step');
    // The examples are one click away.
    await gs.locator('.getting-started-step', { hasText: 'Open a design' }).first().click();
    await gs.getByRole('button', { name: 'Open an Example Design' }).first().click();
    await waitFor('chorus-examples/ in the workspace', () => existsSync(join(ws, 'chorus-examples/fsm/seq_detector.sv')), 30_000);
    await page.locator('.tabs-container .tab.active', { hasText: 'seq_detector.sv' }).first().waitFor({ timeout: 30_000 });
    await wb.toast(/CHORUS: examples in .*chorus-examples/, 15_000);
    await wb.shot('walkthrough-example-opened');
    // The step's completion event (onCommand:chorus.openExample) ticks it off.
    await page.locator('.tabs-container .tab', { hasText: 'Walkthrough' }).first().click();
    await media.getByText('Open an example', { exact: false }).first().waitFor({ timeout: 30_000 });
    await gs.locator('.getting-started-step[aria-checked="true"]', { hasText: 'Open a design' }).first().waitFor({ timeout: 15_000 });
    await wb.shot('walkthrough-step-done');
  });

  it('lists a generation in the CHORUS view: run -> round -> uncovered point, each opening its file', async () => {
    await wb.closeAll();
    await wb.clearNotifications();
    counterCopy('e2e-history', ['counter.sv']);
    const weak = readFileSync(join(ROOT, 'examples/counter/tb_counter_weak.sv'), 'utf8');
    const server = await startScriptedServer(
      Array.from({ length: 6 }, () => fencedReply(weak, 'tb_counter.sv')),
      { models: ['chorus-e2e'] },
    );
    servers.push(server);
    settings({ ...openaiSettings(server), 'chorus.generation.rounds': 2 }); // two rounds at least, to diff
    await page.waitForTimeout(1500);
    await wb.openFile('e2e-history/counter.sv');
    await wb.command('CHORUS: Generate Testbench');
    const tb = join(ws, 'e2e-history/tb_counter.sv');
    await waitFor('e2e-history/tb_counter.sv on disk', () => existsSync(tb), 240_000);
    await wb.closeAll();
    await wb.clearNotifications();

    await page.locator('.activitybar .action-item a[aria-label^="CHORUS"]').first().click();
    const sidebar = page.locator('.part.sidebar');
    const rows = sidebar.locator('.monaco-list-row');
    // The newest run first.
    const run = rows.first();
    await run.filter({ hasText: /generate counter/ }).waitFor({ timeout: 30_000 });
    expect(await run.innerText()).toMatch(/\d+\.\d% · done/);
    await run.click();
    await page.locator('.tabs-container .tab.active', { hasText: 'tb_counter.sv' }).first().waitFor({ timeout: 30_000 });
    expect(await page.locator('.breadcrumbs-control').first().innerText()).toContain('e2e-history');
    await wb.shot('runs-view-run');
    // Expand the run: its round; clicking the round opens that round's testbench.
    await run.locator('.monaco-tl-twistie').click();
    const round = rows.filter({ hasText: /round 1/ }).first();
    await round.waitFor({ timeout: 15_000 });
    await round.click();
    await page.locator('.tabs-container .tab.active', { hasText: 'round1_counter.sv' }).first().waitFor({ timeout: 30_000 });
    await wb.shot('runs-view-round');
    // Expand the round: the uncovered points; clicking one opens the design at its line.
    await round.locator('.monaco-tl-twistie').click();
    const point = rows.filter({ hasText: /counter\.sv:\d+/ }).first();
    await point.waitFor({ timeout: 15_000 });
    const line = Number(/counter\.sv:(\d+)/.exec(await point.innerText())![1]);
    expect(await rows.filter({ hasText: /counter\.sv:\d+/ }).count()).toBeGreaterThan(0);
    await point.click();
    await page
      .locator('.tabs-container .tab.active', { hasText: /^counter\.sv/ })
      .first()
      .waitFor({ timeout: 30_000 });
    await page
      .locator('.statusbar-item', { hasText: `Ln ${line},` })
      .first()
      .waitFor({ timeout: 15_000 });
    await wb.shot('runs-view-point');
    // A later round's inline action diffs it with the round before.
    await round.locator('.monaco-tl-twistie').click();
    const round2 = rows.filter({ hasText: /round 2/ }).first();
    await round2.hover();
    await round2.locator('.action-label[aria-label="Diff with Previous Round"]').click();
    await page
      .locator('.tabs-container .tab.active', { hasText: /round 1 ↔ round 2/ })
      .first()
      .waitFor({ timeout: 30_000 });
    await wb.shot('runs-view-diff');
  });
});
