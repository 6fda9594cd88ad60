// The extension in a real VS Code (code-server 4.100.3 = VS Code 1.100.3) driven by Chromium:
// package the VSIX, install it offline, open a copy of examples/, and run the commands as a user
// would (F1). Screenshots of every step go to test-results/e2e/. Runs only under
// vitest.e2e.config.ts (npm run test:e2e), which sets CHORUS_E2E=1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import {
  ensureCodeServer,
  installVsix,
  launchBrowser,
  packageVsix,
  ROOT,
  startCodeServer,
  waitFor,
  Workbench,
  type CodeServer,
} from './harness.js';
import { fencedReply, startScriptedServer, type ScriptedServer } from '../support/scriptedServer.js';

const enabled = process.env.CHORUS_E2E === '1';

describe.skipIf(!enabled)('VS Code extension in code-server', () => {
  let tmp = '';
  let ws = '';
  let cs: CodeServer | null = null;
  let browser: Browser | null = null;
  let page: Page;
  let wb: Workbench;
  const servers: ScriptedServer[] = [];
  const counterDir = (): string => join(ws, 'examples/counter');

  const settings = (s: Record<string, unknown>): void => {
    mkdirSync(join(ws, '.vscode'), { recursive: true });
    writeFileSync(
      join(ws, '.vscode/settings.json'),
      JSON.stringify(
        { 'workbench.startupEditor': 'none', 'chorus.generation.rounds': 2, 'chorus.generation.coverageTarget': 100, ...s },
        null,
        2,
      ),
    );
  };

  beforeAll(async () => {
    ensureCodeServer();
    tmp = mkdtempSync(join(tmpdir(), 'chorus-e2e-'));
    const vsix = join(tmp, 'chorus.vsix');
    packageVsix(vsix);
    ws = join(tmp, 'ws');
    cpSync(join(ROOT, 'examples'), join(ws, 'examples'), { recursive: true });
    settings({ 'chorus.model.source': 'none' });
    const userData = join(tmp, 'user-data');
    const exts = join(tmp, 'extensions');
    mkdirSync(join(userData, 'User'), { recursive: true });
    writeFileSync(
      join(userData, 'User/settings.json'),
      JSON.stringify({
        'workbench.colorTheme': 'Default Dark Modern',
        'window.commandCenter': false,
        'workbench.tips.enabled': false,
        'chorus.showWalkthroughOnFirstRun': false,
      }),
    );
    installVsix(vsix, userData, exts);
    cs = await startCodeServer(userData, exts, ws);
    browser = await launchBrowser(join(tmp, 'chromium'));
    page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    wb = new Workbench(page);
    await page.goto(`${cs.url}/?folder=${encodeURIComponent(ws)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
    await page
      .locator('.statusbar')
      .getByText('CHORUS', { exact: false })
      .first()
      .waitFor({ timeout: 90_000 })
      .catch(() => undefined);
  });

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await cs?.stop();
    for (const s of servers) await s.close().catch(() => undefined);
    if (tmp && !process.env.CHORUS_E2E_KEEP) rmSync(tmp, { recursive: true, force: true });
  });

  it('generates a testbench with the model-free generator (F1)', async () => {
    await wb.openFile('examples/counter/counter.sv');
    // The extension activates on the language / workspace contents: its status item appears.
    await page.locator('.statusbar-item', { hasText: 'CHORUS' }).first().waitFor({ timeout: 60_000 });
    await wb.shot('design-open');
    await wb.command('CHORUS: Generate Testbench');
    await page
      .locator('.notification-toast', { hasText: 'generating testbench' })
      .first()
      .waitFor({ timeout: 30_000 })
      .catch(() => undefined);
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
    await page.locator('.notification-toast', { hasText: 'generation cancelled' }).first().waitFor({ timeout: 30_000 });
    expect(existsSync(join(counterDir(), 'tb_counter_3.sv'))).toBe(false);
    // The progress ends with the run: nothing keeps saying "generating" after a cancel.
    await page.locator('.statusbar', { hasText: 'generating testbench' }).waitFor({ state: 'detached', timeout: 15_000 });
    await wb.shot('cancelled');
  });
});
