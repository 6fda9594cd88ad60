// The editor tells one truth (issue 45), in a real VS Code (code-server + Chromium): one run's
// figure is the same in the toast, the status bar, the dashboard, the CHORUS view and the Test
// Explorer; every editor run writes the CLI's run folder and the CHORUS view opens its log, report
// and JUnit; a hover names an untaken `else` and why; cancel before a finished round writes
// nothing; Refine edits the testbench (its lines and module name kept, the diff only adds) and re-measures the accepted file; Run Coverage
// reuses the editor that shows the design. Screenshots go to test-results/e2e/ (prefix `truth`).
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { chorusVsix, openSession, ROOT, waitFor, Workbench, type Session } from './harness.js';

const enabled = process.env.CHORUS_E2E === '1';

describe.skipIf(!enabled)('the editor tells one truth', () => {
  let session: Session;
  let vsixDir = '';
  let ws = '';
  let page: Page;
  let wb: Workbench;

  beforeAll(async () => {
    vsixDir = mkdtempSync(join(tmpdir(), 'chorus-e2e-truth-'));
    session = await openSession(chorusVsix(inject('chorusVsix'), vsixDir), { name: 'truth' });
    ({ ws, page, wb } = session);
  });

  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail') await wb?.shot('FAILED').catch(() => undefined);
  });

  afterAll(async () => {
    await session?.close();
    rmSync(vsixDir, { recursive: true, force: true });
  });

  /** Copies files of examples/counter into `<workspace>/<dir>`. */
  const counterCopy = (dir: string, files: string[]): string => {
    const d = join(ws, dir);
    mkdirSync(d, { recursive: true });
    for (const f of files) copyFileSync(join(ROOT, 'examples/counter', f), join(d, f));
    return d;
  };

  /** The figure (`12.3%`) in a text, after `coverage (paper: block+toggle)` when it names it. */
  const figureIn = (text: string): string => {
    const m = /coverage \(paper: block\+toggle\) (\d+\.\d%)/.exec(text) ?? /(\d+\.\d%)/.exec(text);
    if (!m) throw new Error(`no figure in: ${text}`);
    return m[1]!;
  };

  const openRunsView = async (): Promise<void> => {
    await page.locator('.activitybar .action-item a[aria-label^="CHORUS"]').first().click();
    await page.locator('.part.sidebar .monaco-list-row').first().waitFor({ timeout: 30_000 });
  };

  it('one run, one figure: toast, status bar, dashboard, CHORUS view and Test Explorer agree; the hover names the untaken else', async () => {
    await wb.closeAll();
    await wb.clearNotifications();
    counterCopy('truth-figure', ['counter.sv', 'tb_counter_weak.sv']);
    await wb.openFile('truth-figure/tb_counter_weak.sv');
    await wb.command('CHORUS: Run Coverage');
    const toast = await wb.toast(/tb_counter_weak\.sv: coverage \(paper: block\+toggle\)/, 180_000);
    const fromToast = figureIn(await toast.innerText());
    await wb.shot('run-coverage-toast');

    const status = await waitFor(
      'the figure in the status bar',
      async () => /CHORUS: (\d+\.\d%)/.exec(await wb.statusText())?.[1] ?? null,
      30_000,
    );
    expect(status).toBe(fromToast);

    // The design opened beside once; a second Run Coverage reuses that editor.
    await page
      .locator('.tabs-container .tab', { hasText: /^counter\.sv/ })
      .first()
      .waitFor({ timeout: 30_000 });
    await wb.clearNotifications();
    await page.locator('.tabs-container .tab', { hasText: 'tb_counter_weak.sv' }).first().click();
    await wb.command('CHORUS: Run Coverage');
    await wb.toast(/tb_counter_weak\.sv: coverage/, 180_000);
    await page.waitForTimeout(1000);
    expect(await page.locator('.tabs-container .tab', { hasText: /^counter\.sv/ }).count()).toBe(1);
    await wb.shot('run-coverage-again-one-design-tab');

    // The hover on the untaken `else` of `if (up)` (counter.sv line 26) says what and why.
    await page
      .locator('.tabs-container .tab', { hasText: /^counter\.sv/ })
      .first()
      .click();
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    await wb.typeInput(':26:12');
    await page.keyboard.press('Enter');
    await page.locator('.statusbar-item', { hasText: 'Ln 26,' }).first().waitFor({ timeout: 15_000 });
    await wb.command('Show or Focus Hover');
    const hover = page.locator('.monaco-hover', { hasText: 'CHORUS coverage' }).first();
    await hover.waitFor({ timeout: 15_000 });
    const hoverText = await hover.innerText();
    // The formal engine (on by default) found the inputs that take it: the hover says so.
    expect(hoverText).toMatch(
      /the else arm \(line 23\) was never taken — reachable \(witness found\), not yet covered: the formal engine found inputs/,
    );
    await wb.shot('hover-untaken-else');
    await page.keyboard.press('Escape');

    // The dashboard: the same figure, named, and the verdict.
    await wb.command('CHORUS: Show Dashboard');
    const dash = wb.dashboard();
    await dash.locator('#runs li').first().click();
    await waitFor('the dashboard figure', async () => (await dash.locator('#best-coverage').innerText()) === fromToast, 30_000);
    expect(await dash.locator('.summary').innerText()).toMatch(/Best coverage \(paper: block\+toggle\)/);
    expect(await dash.locator('#run-verdict').innerText()).toBe('passed');
    // The uncovered list: one row per point, toggle bits named, the line where the code is.
    const rows = await dash.locator('#uncovered li').allInnerTexts();
    expect(new Set(rows).size).toBe(rows.length);
    expect(rows.some((r) => /toggle counter\.sv:11 din\[3\]/.test(r))).toBe(true);
    expect(rows.some((r) => /branch counter\.sv:26 else/.test(r))).toBe(true);
    await wb.shot('dashboard-one-figure');

    // The CHORUS view: the run's figure and verdict.
    await wb.closeAll();
    await openRunsView();
    const run = page.locator('.part.sidebar .monaco-list-row').first();
    expect(figureIn(await run.innerText())).toBe(fromToast);
    expect(await run.innerText()).toMatch(/· done/);

    // The Test Explorer: the testbench's item carries the scored figure, labelled.
    await wb.command('Testing: Focus on Test Explorer View');
    const item = page.locator('.part.sidebar .monaco-list-row', { hasText: 'tb_counter_weak.sv' }).first();
    await item.waitFor({ timeout: 30_000 });
    await waitFor('the figure on the test item', async () => (await item.innerText()).includes(fromToast), 30_000);
    expect(await item.innerText()).toMatch(/the Test Coverage view counts lines and branches/);
    await wb.shot('test-explorer-figure');
  });

  it("writes the CLI's run folder; the CHORUS view opens its log, report and JUnit", async () => {
    await wb.closeAll();
    await wb.clearNotifications();
    const dir = counterCopy('truth-runfolder', ['counter.sv']);
    await wb.openFile('truth-runfolder/counter.sv');
    await wb.command('CHORUS: Generate Testbench');
    // The progress names where the run is and how long it has run.
    await page
      .locator('.notification-toast', { hasText: /round \d\/\d · .* · \d+s/ })
      .first()
      .waitFor({ timeout: 120_000 });
    await wb.shot('progress-stage-elapsed');
    const tb = join(dir, 'tb_counter.sv');
    await waitFor('tb_counter.sv on disk', () => existsSync(tb), 240_000);
    const latest = join(dir, 'chorus-out', 'counter', 'latest');
    await waitFor('the run folder', () => existsSync(latest), 30_000);
    const run = realpathSync(latest);
    const files = readdirSync(run);
    for (const f of ['coverage.html', 'coverage.info', 'junit.xml', 'summary.json', 'tb_counter.sv', 'round-1.log'])
      expect(files, f).toContain(f);
    const summary = JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8')) as { run_dir: string; generator: string };
    expect(summary).toMatchObject({ run_dir: run, generator: 'builtin' });

    await wb.closeAll();
    await wb.clearNotifications();
    await openRunsView();
    const rows = page.locator('.part.sidebar .monaco-list-row');
    const top = rows.first();
    await top.filter({ hasText: /generate counter/ }).waitFor({ timeout: 30_000 });
    await top.locator('.monaco-tl-twistie').click();
    await rows.filter({ hasText: 'Log' }).first().click();
    await page
      .locator('.tabs-container .tab.active', { hasText: /round-\d\.log/ })
      .first()
      .waitFor({ timeout: 30_000 });
    expect(await page.locator('.monaco-editor .view-lines').first().innerText()).toMatch(/status:\s+success/);
    await wb.shot('runs-view-log');
    await rows.filter({ hasText: 'JUnit' }).first().click();
    await page.locator('.tabs-container .tab.active', { hasText: 'junit.xml' }).first().waitFor({ timeout: 30_000 });
    await wb.shot('runs-view-junit');
    await rows.filter({ hasText: 'Coverage report' }).first().click();
    await page.locator('.tabs-container .tab', { hasText: 'coverage of counter' }).first().waitFor({ timeout: 30_000 });
    const report = page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
    await report.locator('#file-table').waitFor({ timeout: 30_000 });
    expect(await report.locator('body').innerText()).toMatch(/passed: the testbench ran/);
    await wb.shot('runs-view-report');
  });

  it('cancel before a finished round writes nothing and says so', async () => {
    await wb.closeAll();
    await wb.clearNotifications();
    const dir = counterCopy('truth-cancel', []);
    // A design of its own content: no DUT library cached from another test, so round 1 takes a build.
    writeFileSync(join(dir, 'counter.sv'), `// cancel ${Date.now()}\n${readFileSync(join(ROOT, 'examples/counter/counter.sv'), 'utf8')}`);
    await wb.openFile('truth-cancel/counter.sv');
    await wb.command('CHORUS: Generate Testbench');
    await page
      .locator('.notification-toast', { hasText: /round 1\// })
      .first()
      .waitFor({ timeout: 60_000 });
    await wb.command('CHORUS: Cancel');
    await wb.toast(/generation cancelled/, 60_000);
    await wb.shot('cancelled');
    await page.waitForTimeout(2000);
    expect(readdirSync(dir)).toEqual(['counter.sv']);
    expect(await page.locator('.tabs-container .tab', { hasText: /^tb_counter/ }).count()).toBe(0);
    expect(await wb.statusText()).not.toMatch(/CHORUS: \d+\.\d%/);
  });

  it('Refine edits the testbench: its lines and module name are kept, the diff only adds, and the accepted file is measured again', async () => {
    await wb.closeAll();
    await wb.clearNotifications();
    const dir = counterCopy('truth-refine', ['counter.sv', 'tb_counter_weak.sv']);
    const tb = join(dir, 'tb_counter_weak.sv');
    const original = readFileSync(tb, 'utf8');
    await wb.openFile('truth-refine/tb_counter_weak.sv');
    await wb.command('CHORUS: Refine Testbench');
    await wb.pick('Simulate it now');
    const ask = await wb.toast(/accept the revision .* of tb_counter_weak\.sv\?/, 300_000);
    // The diff shows what was added and nothing removed: the user's lines are all there.
    await page.locator('.monaco-diff-editor .line-insert').first().waitFor({ timeout: 30_000 });
    expect(await page.locator('.monaco-diff-editor .line-delete').count()).toBe(0);
    await wb.shot('refine-builtin-diff');
    await ask.locator('.monaco-button', { hasText: 'Accept' }).click();
    const accepted = await waitFor(
      'the revision in tb_counter_weak.sv',
      () => {
        const now = readFileSync(tb, 'utf8');
        return now.includes('chorus_refine();') ? now : null;
      },
      30_000,
    );
    const lines = accepted.split('\n');
    let k = 0;
    for (const line of original.trimEnd().split('\n')) {
      k = lines.indexOf(line, k);
      expect(k, `kept: ${line}`).toBeGreaterThanOrEqual(0);
      k++;
    }
    expect(accepted).not.toMatch(/module tb_counter\b/);
    // Accept is confirmed by a fresh measurement of the file, which every view then shows.
    const toast = await wb.toast(/tb_counter_weak\.sv: coverage \(paper: block\+toggle\)/, 180_000);
    const figure = figureIn(await toast.innerText());
    await waitFor('the status bar', async () => (await wb.statusText()).includes(`CHORUS: ${figure}`), 30_000);
    await wb.shot('refine-accepted-measured');
  });
});
