// `chorus eval compare` read as a researcher reads it: two real `chorus eval` runs (the built-in
// generator, the suite's reference testbenches) on a few VerilogEval tasks, compared; compare.html opened in a real
// browser (Chromium): self-contained, the per-row table, the oracle union and its chart; a
// screenshot lands in test-results/e2e.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { launchBrowser, ROOT, SHOTS } from './harness.js';

const tmp = mkdtempSync(join(tmpdir(), 'chorus-e2e-compare-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const cli = (args: string[]): string =>
  execFileSync(process.execPath, [join(ROOT, 'dist/cli.js'), ...args], { cwd: tmp, encoding: 'utf8', stdio: 'pipe' });

describe('eval compare in a browser', () => {
  it('the built-in generator and the reference testbenches: compare.html shows the rows, the union and the chart, nothing fetched', async () => {
    const suite = join(ROOT, 'bench/data/verilog-eval-v2');
    const tasks = ['--tasks', 'Prob010,Prob020,Prob030,Prob040', '--samples', '1', '--rounds', '0', '--workers', '2'];
    cli(['eval', '--suite', suite, '--generator', 'builtin', ...tasks, '--out', join(tmp, 'row1')]);
    cli(['eval', '--suite', suite, '--reference', ...tasks, '--out', join(tmp, 'row2')]);
    const out = cli(['eval', 'compare', join(tmp, 'row1'), join(tmp, 'row2'), '--out', join(tmp, 'cmp')]);
    expect(out).toMatch(/oracle union\s+Pass@1 \d+\.\d%/);
    const page = join(tmp, 'cmp', 'compare.html');
    expect(existsSync(page)).toBe(true);
    const html = readFileSync(page, 'utf8');
    // No script, and no address but the SVG namespace (an identifier, never fetched).
    expect(html.replaceAll('xmlns="http://www.w3.org/2000/svg"', '')).not.toMatch(/<script\b|https?:\/\//i);
    expect(html).toContain('<svg');

    const browser = await launchBrowser(join(tmp, 'chromium'));
    try {
      const p = await browser.newPage({ viewport: { width: 1300, height: 900 } });
      const requests: string[] = [];
      p.on('request', (r) => {
        if (!r.url().startsWith('file://') && !r.url().startsWith('data:')) requests.push(r.url());
      });
      await p.goto(`file://${page}`);
      const text = await p.locator('body').innerText();
      expect(text.toLowerCase()).toContain('union');
      expect(text).toMatch(/Pass@1/);
      expect(await p.locator('svg').count()).toBeGreaterThan(0);
      expect(requests).toEqual([]);
      await p.screenshot({ path: join(SHOTS, 'eval-compare-html.png') });
    } finally {
      await browser.close();
    }
  });
});
