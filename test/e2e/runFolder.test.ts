// The run folder a `chorus generate` leaves, read as a person reads it: coverage.html opened in a
// real browser (Chromium), with nothing fetched and no script, the design's lines annotated with
// hits and each uncovered point's reason; a screenshot lands in test-results/e2e.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { launchBrowser, ROOT, SHOTS } from './harness.js';

const tmp = mkdtempSync(join(tmpdir(), 'chorus-e2e-runfolder-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('the run folder in a browser', () => {
  it('generate writes the run folder; coverage.html renders self-contained, annotated, with reasons', async () => {
    const dir = join(tmp, 'fsm');
    execFileSync('mkdir', ['-p', dir]);
    copyFileSync(join(ROOT, 'examples/fsm/seq_detector.sv'), join(dir, 'seq_detector.sv'));
    // The default place (beside the design), whatever the test environment sets.
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.CHORUS_OUT_DIR;
    execFileSync(process.execPath, [join(ROOT, 'dist/cli.js'), 'generate', join(dir, 'seq_detector.sv'), '--rounds', '1'], {
      cwd: tmp,
      env,
      stdio: 'pipe',
    });
    const latest = join(dir, 'chorus-out', 'seq_detector', 'latest');
    expect(existsSync(latest)).toBe(true);
    const run = realpathSync(latest);
    const files = readdirSync(run).sort();
    for (const f of [
      'coverage.dat',
      'coverage.html',
      'coverage.info',
      'junit.xml',
      'round-1.log',
      'round-1.sv',
      'summary.json',
      'tb_seq_detector.sv',
    ])
      expect(files).toContain(f);
    const html = readFileSync(join(run, 'coverage.html'), 'utf8');
    expect(html).toMatch(/default-src 'none'/);
    expect(html).not.toMatch(/<script\b|https?:\/\//i);

    const browser = await launchBrowser(join(tmp, 'chromium'));
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      const requests: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith('file://')) requests.push(r.url());
      });
      await page.goto(`file://${join(run, 'coverage.html')}`);
      const text = await page.locator('body').innerText();
      // The design's own source, annotated; the unreachable default arm of the FSM has its reason.
      expect(text).toContain('module seq_detector');
      expect(text).toMatch(/\d+(\.\d+)?%/);
      expect(text.toLowerCase()).toMatch(/unreachable|not hit|tied off|dead under/);
      expect(requests).toEqual([]);
      await page.screenshot({ path: join(SHOTS, 'runfolder-coverage-html.png'), fullPage: false });
    } finally {
      await browser.close();
    }
  });
});
