// CHORUS beside the Verilog-HDL extension (mshr-h.veriloghdl), which contributes the same language
// ids, file extensions and grammar scope names. That extension cannot be downloaded here, so a
// stand-in with the same contributions (test/fixtures/vscode-verilog-hdl-standin) is packaged and
// installed next to our VSIX in a code-server of its own.
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chorusVsix, openSession, packageFolderVsix, ROOT, waitFor, type Session } from './harness.js';

const enabled = process.env.CHORUS_E2E === '1';

/** Every line of the session's extension-host logs that reports an error. */
function extensionHostErrors(userData: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/exthost.*\.log$/.test(e.name))
        out.push(
          ...readFileSync(p, 'utf8')
            .split('\n')
            .filter((l) => /\[error\]/.test(l)),
        );
    }
  };
  if (existsSync(join(userData, 'logs'))) walk(join(userData, 'logs'));
  return out;
}

describe.skipIf(!enabled)('CHORUS beside the Verilog-HDL extension', () => {
  let session: Session;
  let tmp = '';

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'chorus-e2e-standin-'));
    const fixture = join(tmp, 'veriloghdl');
    cpSync(join(ROOT, 'test/fixtures/vscode-verilog-hdl-standin'), fixture, { recursive: true });
    const standin = join(tmp, 'veriloghdl.vsix');
    packageFolderVsix(fixture, standin);
    session = await openSession(chorusVsix(inject('chorusVsix'), tmp), {
      name: 'coexist',
      extraVsix: [standin],
      // A fresh install as a user has it: the walkthrough opens on the first activation.
      userSettings: { 'chorus.showWalkthroughOnFirstRun': true },
    });
  });

  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail') await session?.wb.shot('FAILED').catch(() => undefined);
  });

  afterAll(async () => {
    await session?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('shows the walkthrough on first run, opens .sv and .v with their language ids, generates on the example, shows no error', async () => {
    const { page, wb, ws } = session;
    // Both extensions are active: the stand-in's status item and ours.
    await page.locator('.statusbar-item', { hasText: 'Verilog-HDL stand-in' }).first().waitFor({ timeout: 60_000 });
    await page.locator('.tabs-container .tab', { hasText: 'Walkthrough: CHORUS' }).first().waitFor({ timeout: 60_000 });
    await page.locator('.gettingStartedContainer').getByText('Get started with CHORUS').first().waitFor({ timeout: 30_000 });
    await wb.shot('first-run-walkthrough');
    // (a folder of its own: beside counter.sv it would be a second top module of that design)
    mkdirSync(join(ws, 'misc'));
    writeFileSync(join(ws, 'misc/and2.v'), 'module and2(input a, input b, output y);\n  assign y = a & b; // and\nendmodule\n');
    await wb.openFile('misc/and2.v');
    const mode = page.locator('.statusbar-item#status\\.editor\\.mode');
    await mode.filter({ hasText: /^\s*Verilog\s*$/ }).waitFor({ timeout: 30_000 });
    await wb.openFile('examples/counter/counter.sv');
    await mode.filter({ hasText: /System ?Verilog/ }).waitFor({ timeout: 30_000 });
    await page.locator('.statusbar-item', { hasText: 'CHORUS' }).first().waitFor({ timeout: 60_000 });
    // A grammar colours the text: keywords, comments and numbers get token classes of their own.
    const tokenClasses = await waitFor(
      'highlighted tokens',
      async () => {
        const classes = await page
          .locator('.monaco-editor .view-lines span[class^="mtk"]')
          .evaluateAll((els) => [...new Set(els.map((e) => e.className))]);
        return classes.length >= 3 ? classes : null;
      },
      30_000,
    );
    expect(tokenClasses.length).toBeGreaterThanOrEqual(3);
    await wb.shot('design-open');

    session.settings({ 'chorus.generation.rounds': 1 });
    await page.waitForTimeout(1500);
    await wb.command('CHORUS: Generate Testbench');
    const tb = join(ws, 'examples/counter/tb_counter_1.sv');
    await waitFor('tb_counter_1.sv on disk', () => existsSync(tb), 240_000);
    expect(readFileSync(tb, 'utf8')).toMatch(/module tb_counter/);
    await page
      .locator('.statusbar-item', { hasText: /CHORUS: \d+\.\d%/ })
      .first()
      .waitFor({ timeout: 60_000 });
    await wb.toast(/tb_counter_1\.sv: coverage/, 30_000);
    await wb.shot('generated');

    // No error anywhere: no error toast, none in the notification centre, none in the extension host log.
    await wb.command('Notifications: Show Notifications');
    const center = page.locator('.notifications-center');
    await center.waitFor({ timeout: 15_000 });
    await wb.shot('notifications');
    expect(
      await page.locator('.notifications-toasts [class*="codicon-error"], .notifications-center [class*="codicon-error"]').count(),
    ).toBe(0);
    const errors = extensionHostErrors(join(session.tmp, 'user-data'));
    expect(errors.filter((l) => /chorus|veriloghdl|grammar|systemverilog/i.test(l))).toEqual([]);
    await page.keyboard.press('Escape');
  });
});
