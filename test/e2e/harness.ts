// code-server + Chromium harness for the end-to-end tests: a fresh user-data dir, extensions dir
// and workspace per run; the packaged VSIX installed offline; everything killed at the end.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type FrameLocator, type Locator, type Page } from 'playwright-core';

export const ROOT = resolve(import.meta.dirname, '../..');
export const SHOTS = join(ROOT, 'test-results/e2e');
export const CODE_SERVER_DIR = process.env.CHORUS_CODE_SERVER_DIR ?? join(ROOT, '.chorus-cache/e2e/code-server');
const ENTRY = join(CODE_SERVER_DIR, 'node_modules/code-server/out/node/entry.js');

export function ensureCodeServer(): void {
  const r = spawnSync('bash', [join(ROOT, 'test/e2e/setup-code-server.sh')], {
    stdio: 'inherit',
    env: { ...process.env, CHORUS_CODE_SERVER_DIR: CODE_SERVER_DIR },
  });
  if (r.status !== 0 || !existsSync(ENTRY)) throw new Error('code-server setup failed (test/e2e/setup-code-server.sh)');
}

export function packageVsix(out: string): void {
  const r = spawnSync(process.execPath, ['scripts/build-extension.mjs', '--production', '--package'], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, CHORUS_VSIX: out },
  });
  if (r.status !== 0 || !existsSync(out)) throw new Error('packaging the VSIX failed');
}

/** Packs a plain extension folder (a test fixture) into a VSIX with vsce, offline. */
export function packageFolderVsix(dir: string, out: string): void {
  const r = spawnSync(
    process.execPath,
    [
      join(ROOT, 'node_modules/@vscode/vsce/vsce'),
      'package',
      '--no-dependencies',
      '--skip-license',
      '--allow-missing-repository',
      '-o',
      out,
    ],
    { cwd: dir, encoding: 'utf8', timeout: 120_000 },
  );
  if (r.status !== 0 || !existsSync(out)) throw new Error(`packaging ${dir} failed:\n${r.stdout}\n${r.stderr}`);
}

export function installVsix(vsix: string, userData: string, extensions: string): string {
  const r = spawnSync(process.execPath, [ENTRY, '--user-data-dir', userData, '--extensions-dir', extensions, '--install-extension', vsix], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  const out = `${r.stdout}\n${r.stderr}`;
  if (r.status !== 0 || !/successfully installed/i.test(out)) throw new Error(`installing the VSIX failed:\n${out}`);
  return out;
}

export interface CodeServer {
  url: string;
  proc: ChildProcess;
  log: () => string;
  stop(): Promise<void>;
}

/** `trusted: false` leaves workspace trust on, so the folder opens in Restricted Mode (with
 * `security.workspace.trust.startupPrompt: never` in the user settings, nobody is asked). */
export async function startCodeServer(
  userData: string,
  extensions: string,
  workspace: string,
  opts: { trusted?: boolean; env?: Record<string, string> } = {},
): Promise<CodeServer> {
  const proc = spawn(
    process.execPath,
    [
      ENTRY,
      '--auth',
      'none',
      '--bind-addr',
      '127.0.0.1:0',
      '--disable-telemetry',
      '--disable-update-check',
      ...(opts.trusted === false ? [] : ['--disable-workspace-trust']),
      '--user-data-dir',
      userData,
      '--extensions-dir',
      extensions,
      workspace,
    ],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PASSWORD: undefined, ...opts.env } },
  );
  let log = '';
  proc.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const url = await new Promise<string>((ok, fail) => {
    const t = setTimeout(() => fail(new Error(`code-server did not start:\n${log}`)), 60_000);
    const check = (): void => {
      const m = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(log);
      if (m) {
        clearTimeout(t);
        ok(m[1]);
      }
    };
    proc.stdout!.on('data', check);
    proc.stderr!.on('data', check);
    proc.on('exit', (c) => fail(new Error(`code-server exited (${c}):\n${log}`)));
  });
  return {
    url,
    proc,
    log: () => log,
    stop: async () => {
      if (proc.exitCode !== null || proc.pid === undefined) return;
      const gone = new Promise<void>((ok) => proc.once('exit', () => ok()));
      try {
        process.kill(-proc.pid, 'SIGTERM');
      } catch {
        /* already gone */
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-proc.pid!, 'SIGKILL');
        } catch {
          /* gone */
        }
      }, 5000);
      await gone;
      clearTimeout(timer);
      // The extension host and the CHORUS worker live in the same process group.
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        /* all gone */
      }
    },
  };
}

export async function launchBrowser(profile: string): Promise<Browser> {
  mkdirSync(profile, { recursive: true });
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
    ],
  });
}

export class Workbench {
  private n = 0;
  /** `prefix` keeps the screenshots of several sessions (test files) apart in SHOTS. */
  constructor(
    readonly page: Page,
    readonly prefix = '',
  ) {}

  async shot(name: string): Promise<string> {
    mkdirSync(SHOTS, { recursive: true });
    const p = join(SHOTS, `${this.prefix ? `${this.prefix}-` : ''}${String(++this.n).padStart(2, '0')}-${name}.png`);
    await this.page.screenshot({ path: p });
    return p;
  }

  async command(title: string): Promise<void> {
    const { page } = this;
    await page.keyboard.press('Escape');
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: 15_000 });
    await input.fill(`>${title}`);
    // The palette lists what the `when` clauses allow when it opens; a context key the extension
    // sets for the editor that just opened (chorus.editorIsHdl) can arrive a moment later, so
    // reopen it until the command shows.
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
    for (let attempt = 1; ; attempt++) {
      try {
        await row.waitFor({ timeout: 5_000 });
        break;
      } catch (e) {
        if (attempt === 4) throw e;
        await page.keyboard.press('Escape');
        await page.keyboard.press('F1');
        await input.waitFor({ state: 'visible', timeout: 15_000 });
        await input.fill(`>${title}`);
      }
    }
    await page.keyboard.press('Enter');
  }

  async openFile(relPath: string): Promise<void> {
    const { page } = this;
    await page.keyboard.press('Escape');
    // F1 then a plain path is Quick Open (Ctrl+P can reach the browser's print dialog when the
    // focus sits outside the workbench, e.g. after a webview closed).
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: 15_000 });
    await input.fill(relPath);
    const name = relPath.split('/').pop()!;
    await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 30_000 });
    await page.keyboard.press('Enter');
    try {
      await page.locator('.tabs-container .tab.active', { hasText: name }).first().waitFor({ timeout: 30_000 });
    } catch (e) {
      await this.shot(`FAILED-open-${name}`);
      throw e;
    }
  }

  /** Closes every editor group, so each step starts from one group. */
  async closeAll(): Promise<void> {
    await this.command('View: Close All Editor Groups');
    // The panel too (Problems stays open after a step showed it): each step's screenshot shows
    // its own editors.
    if (await this.page.locator('#workbench\\.parts\\.panel').isVisible()) await this.command('View: Hide Panel');
    await this.page.waitForTimeout(500);
  }

  /** Dismisses every notification, so a step's screenshot shows only its own toasts. */
  async clearNotifications(): Promise<void> {
    await this.command('Notifications: Clear All Notifications');
    await this.page
      .locator('.notification-toast')
      .first()
      .waitFor({ state: 'detached', timeout: 10_000 })
      .catch(() => undefined);
  }

  /** The toast whose text matches `text` (waits for it). */
  async toast(text: string | RegExp, timeout = 60_000): Promise<Locator> {
    const t = this.page.locator('.notification-toast', { hasText: text }).first();
    await t.waitFor({ timeout });
    await this.page.waitForTimeout(500); // toasts slide in: a screenshot right away cuts them off
    return t;
  }

  /** Shows a toast's whole message (a long one is cut to one line until expanded). */
  async expandToast(t: Locator): Promise<void> {
    await t.hover();
    const expand = t.locator('.codicon-notifications-expand');
    if (await expand.count()) await expand.first().click();
    await this.page.waitForTimeout(300);
  }

  /** Picks the quick-pick row that holds `text` (the quick input must be open). */
  async pick(text: string | RegExp, timeout = 30_000): Promise<void> {
    const row = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: text }).first();
    await row.waitFor({ timeout });
    await row.click();
  }

  /** Types into the open quick input (input box or simple file dialog), replacing its value. */
  async typeInput(value: string, timeout = 30_000): Promise<void> {
    const input = this.page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout });
    await input.fill(value);
  }

  statusText(): Promise<string> {
    return this.page.locator('.statusbar').innerText();
  }

  dashboard(): FrameLocator {
    return this.page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
  }
}

export async function waitFor<T>(what: string, f: () => T | Promise<T>, timeoutMs: number, stepMs = 500): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

export interface SessionOptions {
  /** Names the screenshots of this session (several test files share SHOTS). */
  name: string;
  /** false: the workspace opens in Restricted Mode (workspace trust left on). */
  trusted?: boolean;
  /** Further VSIX files installed beside ours (e.g. a stand-in for another HDL extension). */
  extraVsix?: string[];
  /** User settings beside the defaults below. */
  userSettings?: Record<string, unknown>;
  /** Environment of code-server beside this process's (its extension host and the CHORUS worker
   * inherit it), e.g. HF_ENDPOINT of a stand-in hub. */
  env?: Record<string, string>;
}

/** One code-server + Chromium with our VSIX installed and a copy of examples/ as the workspace. */
export interface Session {
  tmp: string;
  ws: string;
  cs: CodeServer;
  browser: Browser;
  page: Page;
  wb: Workbench;
  /** Replaces the workspace settings (.vscode/settings.json) with the defaults plus `s`. */
  settings(s: Record<string, unknown>): void;
  close(): Promise<void>;
}

export const WORKSPACE_DEFAULTS = {
  'workbench.startupEditor': 'none',
  'chorus.generation.rounds': 2,
  'chorus.generation.coverageTarget': 100,
  'chorus.model.source': 'none',
};

/** The VSIX of this working tree: packaged once per run by globalSetup.ts (`chorusVsix`), or here
 * when a file runs without it. */
export function chorusVsix(provided: string | undefined, tmp: string): string {
  if (provided && existsSync(provided)) return provided;
  const vsix = join(tmp, 'chorus.vsix');
  packageVsix(vsix);
  return vsix;
}

export async function openSession(vsix: string, opts: SessionOptions): Promise<Session> {
  const tmp = mkdtempSync(join(tmpdir(), `chorus-e2e-${opts.name}-`));
  const ws = join(tmp, 'ws');
  cpSync(join(ROOT, 'examples'), join(ws, 'examples'), { recursive: true });
  const settings = (s: Record<string, unknown>): void => {
    mkdirSync(join(ws, '.vscode'), { recursive: true });
    writeFileSync(join(ws, '.vscode/settings.json'), JSON.stringify({ ...WORKSPACE_DEFAULTS, ...s }, null, 2));
  };
  settings({});
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
      // Also here: Restricted Mode ignores the workspace's settings.
      'workbench.startupEditor': 'none',
      // The scripted model servers listen on loopback ports: no "forwarded port" noise.
      'remote.autoForwardPorts': false,
      ...opts.userSettings,
    }),
  );
  for (const v of [vsix, ...(opts.extraVsix ?? [])]) installVsix(v, userData, exts);
  let cs: CodeServer | null = null;
  let browser: Browser | null = null;
  const close = async (): Promise<void> => {
    await browser?.close().catch(() => undefined);
    await cs?.stop();
    if (!process.env.CHORUS_E2E_KEEP) rmSync(tmp, { recursive: true, force: true });
  };
  try {
    cs = await startCodeServer(userData, exts, ws, { trusted: opts.trusted, env: opts.env });
    browser = await launchBrowser(join(tmp, 'chromium'));
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    const wb = new Workbench(page, opts.name);
    await page.goto(`${cs.url}/?folder=${encodeURIComponent(ws)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
    await page
      .locator('.statusbar')
      .getByText('CHORUS', { exact: false })
      .first()
      .waitFor({ timeout: 90_000 })
      .catch(() => undefined);
    return { tmp, ws, cs, browser, page, wb, settings, close };
  } catch (e) {
    await close();
    throw e;
  }
}
