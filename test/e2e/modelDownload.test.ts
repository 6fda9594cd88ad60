// "CHORUS: Download a Model..." in a real VS Code (code-server + Chromium) against a local stand-in
// of the Hugging Face Hub (test/support/hubServer.ts): code-server starts with HF_ENDPOINT pointing
// at it and CHORUS_MODELS_DIR at a temporary model cache, so its extension host and the CHORUS
// worker use both. From the command palette: the repository typed, the model picked among the
// repository's, the modal confirmation before any byte, the progress notification (bytes, rate,
// time left) cancelled mid-file (no model listed, a partial kept), then the download again,
// resumed, to the success notification; the file's bytes are the hub's, "Use This Model" points
// chorus.model.localPath at it, and Select Model lists it. Screenshots go to test-results/e2e.
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chorusVsix, openSession, waitFor, type Session } from './harness.js';
import { bytes, startHubServer, type HubServer } from '../support/hubServer.js';
import { listModels, listPartials } from '../../src/core/llm/hub/cache.js';

const enabled = process.env.CHORUS_E2E === '1';
// Over four of the downloader's 5 MB chunks: the cancelled download keeps the ones it completed.
const BIG = 24_000_000;
const gguf = bytes(BIG, 7);
const REPO = 'acme/tiny-GGUF';

describe.skipIf(!enabled)('Download a Model in code-server', () => {
  let session: Session;
  let hub: HubServer;
  let tmp = '';
  let models = '';

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'chorus-e2e-download-'));
    models = join(tmp, 'models');
    hub = await startHubServer({
      [REPO]: {
        files: [
          { path: 'tiny.Q4_K_M.gguf', content: gguf },
          { path: 'tiny.Q8_0.gguf', content: bytes(3000, 2) },
          { path: 'tokenizer_config.json', content: Buffer.from('{"chat_template":"{{ messages }}"}') },
          { path: 'README.md', content: Buffer.from('# tiny') },
        ],
      },
    });
    session = await openSession(chorusVsix(inject('chorusVsix'), tmp), {
      name: 'download',
      env: { HF_ENDPOINT: hub.url, CHORUS_MODELS_DIR: models, HF_TOKEN: '' },
    });
  });

  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail') await session?.wb.shot('FAILED').catch(() => undefined);
  });

  afterAll(async () => {
    await session?.close();
    await hub?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  /** The workspace settings ({} while VS Code is writing them). */
  const workspaceSettings = (): Record<string, unknown> => {
    try {
      return JSON.parse(readFileSync(join(session.ws, '.vscode/settings.json'), 'utf8')) as Record<string, unknown>;
    } catch {
      return {};
    }
  };

  /** Runs the command, types `ref`, and waits for the modal confirmation (picking `pick` first). */
  async function startDownload(ref: string, pick: string | null): Promise<void> {
    const { page, wb } = session;
    await wb.command('CHORUS: Download a Model...');
    await page.locator('.quick-input-widget', { hasText: 'Download a Model from Hugging Face' }).waitFor({ timeout: 30_000 });
    await wb.typeInput(ref);
    await page.keyboard.press('Enter');
    if (pick) {
      await page.locator('.quick-input-widget', { hasText: 'holds several models' }).waitFor({ timeout: 60_000 });
      await page.locator('.quick-input-list .monaco-list-row', { hasText: '(default)' }).first().waitFor({ timeout: 15_000 });
      await wb.shot('picker');
      await wb.pick(pick);
    }
    await page.locator('.monaco-dialog-box', { hasText: `Download ${REPO}` }).waitFor({ timeout: 60_000 });
  }

  const dialogButton = (label: string) =>
    session.page.locator('.monaco-dialog-box .dialog-buttons .monaco-button', { hasText: label }).first();

  it('asks before a byte leaves; cancelled mid-file from the notification, no model is listed and a partial is kept', async () => {
    const { page, wb } = session;
    await page.locator('.statusbar-item', { hasText: 'CHORUS' }).first().waitFor({ timeout: 90_000 });
    await wb.clearNotifications();
    hub.faults.rate = 250_000;

    // Not a repository: the input box says what it wants.
    await wb.command('CHORUS: Download a Model...');
    await page.locator('.quick-input-widget', { hasText: 'Download a Model from Hugging Face' }).waitFor({ timeout: 30_000 });
    await wb.typeInput('tiny');
    await page.locator('.quick-input-widget', { hasText: 'is not a model repository' }).waitFor({ timeout: 15_000 });
    await wb.shot('bad-ref');
    await page.keyboard.press('Escape');

    await startDownload(REPO, 'tiny.Q4_K_M.gguf');
    const dialog = page.locator('.monaco-dialog-box');
    expect(await dialog.innerText()).toMatch(/Download acme\/tiny-GGUF \(tiny\.Q4_K_M\.gguf, 24\.0 MB\) from 127\.0\.0\.1:\d+\?/);
    await wb.shot('confirm');
    // Nothing of the model was fetched before the answer.
    expect(hub.requests.some((r) => r.path.includes('/resolve/') || r.path.startsWith('/cdn/'))).toBe(false);
    await dialogButton('Download').click();

    const toast = page.locator('.notification-toast', { hasText: `downloading ${REPO}` }).first();
    await toast.waitFor({ timeout: 60_000 });
    await page
      .locator('.notification-toast', { hasText: /MB of 24\.0 MB, [\d.]+ [KM]B\/s, .*left/ })
      .first()
      .waitFor({ timeout: 60_000 });
    // The downloader writes a chunk once it is whole: cancel once one is on disk (a partial to resume).
    await waitFor('a chunk of the file on disk', () => listPartials(models).some((p) => p.resumable), 120_000);
    await wb.shot('progress');
    await toast.hover();
    await toast.locator('.monaco-button', { hasText: 'Cancel' }).first().click();
    await wb.toast('was cancelled; the next download of it resumes where it stopped', 60_000);
    await wb.shot('cancelled');
    expect(listModels(models)).toEqual([]);
    expect(listPartials(models)).toHaveLength(1);
    expect(existsSync(join(models, 'acme'))).toBe(false);
  });

  it('downloads again, resuming, to the success notification; Use This Model points the settings at it', async () => {
    const { page, wb } = session;
    await wb.clearNotifications();
    hub.faults.rate = undefined;
    await startDownload(`${REPO}:Q4_K_M`, null);
    expect(await page.locator('.monaco-dialog-box').innerText()).toMatch(/A cancelled download of it is resumed/);
    await wb.shot('confirm-resume');
    await dialogButton('Download').click();

    const done = await wb.toast(/Downloaded acme\/tiny-GGUF \(tiny\.Q4_K_M\.gguf\) to /, 120_000);
    await wb.shot('downloaded');
    const [m] = listModels(models);
    expect(m).toBeDefined();
    expect(m.repo).toBe(REPO);
    expect(readFileSync(join(m.dir, 'tiny.Q4_K_M.gguf')).equals(gguf)).toBe(true);
    expect(listPartials(models)).toEqual([]);
    // The resumed download fetched a range past the start of the file.
    expect(hub.requests.some((r) => r.path.startsWith('/cdn/') && /^bytes=[1-9]/.test(r.range ?? ''))).toBe(true);

    await done.hover();
    await done.locator('.monaco-button', { hasText: 'Use This Model' }).first().click();
    const s = await waitFor(
      'the model settings',
      () => (workspaceSettings()['chorus.model.source'] === 'local' ? workspaceSettings() : null),
      30_000,
    );
    expect(s['chorus.model.localPath']).toBe(m.dir);
    expect(s['chorus.model.engine']).toBe('llama');
    await wb.toast(`using ${REPO} (tiny.Q4_K_M.gguf)`, 30_000);
    await wb.shot('use-this-model');
    await waitFor(
      'editor.json',
      () => existsSync(join(models, 'editor.json')) && readFileSync(join(models, 'editor.json'), 'utf8').endsWith('\n'),
      15_000,
    );
    expect(JSON.parse(readFileSync(join(models, 'editor.json'), 'utf8'))).toEqual({ dir: m.dir });
  });

  it('Select Model lists the downloaded model and offers the download', async () => {
    const { page, wb } = session;
    await wb.clearNotifications();
    await wb.command('CHORUS: Select Model');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: REPO }).first().waitFor({ timeout: 30_000 });
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'Download a model from Hugging Face' })
      .first()
      .waitFor({ timeout: 5_000 });
    expect(await page.locator('.quick-input-list .monaco-list-row', { hasText: REPO }).first().innerText()).toMatch(/in use/);
    await wb.shot('select-model-cached');
    await page.keyboard.press('Escape');
  });
});
