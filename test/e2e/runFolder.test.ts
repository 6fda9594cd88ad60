// The run folder a `chorus generate` leaves, read as a person reads it: coverage.html opened in a
// real browser (Chromium), with nothing fetched and no script, the design's lines annotated with
// hits and each uncovered point's reason; a screenshot lands in test-results/e2e.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
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

  it('a multi-file design: the index tables, a link to a file section, nothing wider than the window', async () => {
    const dir = join(tmp, 'two');
    execFileSync('mkdir', ['-p', dir]);
    writeFileSync(
      join(dir, 'stage.sv'),
      '// One register stage, in a file of its own.\nmodule stage (input logic clk, input logic [7:0] d, output logic [7:0] q);\n  always_ff @(posedge clk) q <= d; // a comment long enough to need wrapping in a narrow window, which the page must do rather than scroll sideways\nendmodule\n',
    );
    writeFileSync(
      join(dir, 'pipe.sv'),
      "module pipe (input logic clk, input logic [7:0] d, input logic en, output logic [7:0] q);\n  logic [7:0] m;\n  stage s0 (.clk, .d(en ? d : 8'd0), .q(m));\n  stage s1 (.clk, .d(m), .q(q));\nendmodule\n",
    );
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.CHORUS_OUT_DIR;
    execFileSync(
      process.execPath,
      [join(ROOT, 'dist/cli.js'), 'generate', '--top', 'pipe', join(dir, 'pipe.sv'), join(dir, 'stage.sv'), '--rounds', '0'],
      { cwd: tmp, env, stdio: 'pipe' },
    );
    const run = realpathSync(join(dir, 'chorus-out', 'pipe', 'latest'));
    const browser = await launchBrowser(join(tmp, 'chromium2'));
    try {
      const page = await browser.newPage({ viewport: { width: 900, height: 900 } });
      await page.goto(`file://${join(run, 'coverage.html')}`);
      // One row per file and the total; one per instance: the DUT, and its two identical stages
      // as one row (points of identical instances are counted once, as the scored figure does).
      expect(await page.locator('#file-table tbody tr').count()).toBe(3);
      expect(await page.locator('#instance-table tbody tr').allInnerTexts()).toEqual([
        expect.stringMatching(/^tb_pipe\.uut\s/),
        expect.stringMatching(/^tb_pipe\.uut\.s\*\s/),
      ]);
      await expect.poll(() => page.locator('#verdict').innerText()).toMatch(/^(passed|failed)/);
      const wide = Number(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'));
      expect(wide).toBeLessThanOrEqual(0);
      await page.screenshot({ path: join(SHOTS, 'runfolder-report-index.png'), fullPage: false });
      // The second file's link leads to its annotated section.
      const second = page.locator('#file-table tbody tr').nth(1).locator('a');
      const target = await second.getAttribute('href');
      await second.click();
      expect(new URL(page.url()).hash).toBe(target);
      const section = page.locator(target!);
      await expect.poll(() => section.isVisible()).toBe(true);
      expect(await page.locator(`${target}-L1`).count()).toBe(1);
      await page.screenshot({ path: join(SHOTS, 'runfolder-report-file.png'), fullPage: false });
    } finally {
      await browser.close();
    }
  });
});
