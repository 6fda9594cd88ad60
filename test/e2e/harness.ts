// code-server + Chromium harness for the end-to-end tests: a fresh user-data dir, extensions dir
// and workspace per run; the packaged VSIX installed offline; everything killed at the end.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type FrameLocator, type Page } from 'playwright-core';

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

export async function startCodeServer(userData: string, extensions: string, workspace: string): Promise<CodeServer> {
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
      '--disable-workspace-trust',
      '--user-data-dir',
      userData,
      '--extensions-dir',
      extensions,
      workspace,
    ],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PASSWORD: undefined } },
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
  constructor(readonly page: Page) {}

  async shot(name: string): Promise<string> {
    mkdirSync(SHOTS, { recursive: true });
    const p = join(SHOTS, `${String(++this.n).padStart(2, '0')}-${name}.png`);
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
    await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor({ timeout: 15_000 });
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
    await this.page.waitForTimeout(500);
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
