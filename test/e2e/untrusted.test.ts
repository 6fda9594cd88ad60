// CHORUS in an untrusted workspace (Restricted Mode): a testbench becomes a native executable, so
// Generate, Run Coverage and Refine run nothing there and say why, with the way to trust the
// folder; trusted, they run. A code-server of its own, started with workspace trust on and no startup prompt.
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chorusVsix, openSession, waitFor, type Session } from './harness.js';

const enabled = process.env.CHORUS_E2E === '1';
const WHY = /does not run a simulator or generated testbenches in an untrusted workspace/;

describe.skipIf(!enabled)('CHORUS in an untrusted workspace', () => {
  let session: Session;
  let tmp = '';

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'chorus-e2e-untrusted-'));
    session = await openSession(chorusVsix(inject('chorusVsix'), tmp), {
      name: 'untrusted',
      trusted: false,
      userSettings: { 'security.workspace.trust.enabled': true, 'security.workspace.trust.startupPrompt': 'never' },
    });
  });

  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail') await session?.wb.shot('FAILED').catch(() => undefined);
  });

  afterAll(async () => {
    await session?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('Generate, Run Coverage and Refine say why they do nothing, nothing is written; trusted, Generate runs', async () => {
    const { page, wb, ws } = session;
    const counter = join(ws, 'examples/counter');
    const before = readdirSync(counter).sort();
    await page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).first().waitFor({ timeout: 60_000 });
    await wb.openFile('examples/counter/counter.sv');
    await page.locator('.statusbar-item', { hasText: 'CHORUS' }).first().waitFor({ timeout: 60_000 });

    await wb.command('CHORUS: Generate Testbench');
    const toast = await wb.toast(WHY, 30_000);
    expect(await toast.locator('.monaco-button', { hasText: 'Manage Workspace Trust' }).count()).toBe(1);
    await wb.shot('generate-refused');

    for (const command of ['CHORUS: Run Coverage', 'CHORUS: Refine Testbench']) {
      await wb.clearNotifications();
      await wb.openFile('examples/counter/tb_counter.sv');
      await wb.command(command);
      await wb.toast(WHY, 30_000);
      await wb.shot(`${command.split(': ')[1].toLowerCase().replace(/ /g, '-')}-refused`);
    }
    // No testbench, no build folder, no coverage file: the folder is as it was.
    await page.waitForTimeout(2000);
    expect(readdirSync(counter).sort()).toEqual(before);

    // The message's button leads to the trust editor.
    const t = await wb.toast(WHY, 5_000);
    await t.locator('.monaco-button', { hasText: 'Manage Workspace Trust' }).click();
    await page.locator('.tabs-container .tab', { hasText: 'Workspace Trust' }).first().waitFor({ timeout: 30_000 });
    await page.locator('.workspace-trust-editor', { hasText: 'Restricted Mode' }).first().waitFor({ timeout: 30_000 });
    await page.waitForTimeout(1000);
    await wb.shot('trust-editor');

    // Trusted, the same command runs.
    await page
      .locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust$/ })
      .first()
      .click();
    await page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).first().waitFor({ state: 'detached', timeout: 30_000 });
    await wb.closeAll();
    await wb.openFile('examples/counter/counter.sv');
    await wb.command('CHORUS: Generate Testbench');
    await waitFor('tb_counter_1.sv on disk', () => existsSync(join(counter, 'tb_counter_1.sv')), 240_000);
    await wb.toast(/tb_counter_1\.sv: coverage/, 60_000);
    await wb.shot('trusted-generated');
  });
});
