// `chorus eval compare` read as a researcher reads it: two real `chorus eval` runs (the built-in
// generator, the suite's reference testbenches) on a few VerilogEval tasks, compared; compare.html
// opened in a real browser (Chromium): self-contained (its one inline script sorts the per-task
// table), the per-row table, the oracle union and its two-series chart, the per-task table sorted
// by clicking its headers; a screenshot lands in test-results/e2e.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Comparison } from '../../src/core/eval/compare.js';
import { launchBrowser, ROOT, SHOTS } from './harness.js';

const tmp = mkdtempSync(join(tmpdir(), 'chorus-e2e-compare-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const cli = (args: string[]): string =>
  execFileSync(process.execPath, [join(ROOT, 'dist/cli.js'), ...args], { cwd: tmp, encoding: 'utf8', stdio: 'pipe' });

/** The task ids in the order the page's script gives for a column: its key ascending (or
 * descending), keyless cells last, ties in task-id order. */
function expectedOrder(c: Comparison, key: (t: Comparison['tasks'][number]) => number | null, dir: 1 | -1): string[] {
  return c.tasks
    .map((t, i) => ({ id: t.id, i, k: key(t) }))
    .sort((a, b) => {
      if (a.k === null || b.k === null) {
        if (a.k !== b.k) return a.k === null ? 1 : -1;
      } else if (a.k !== b.k) return dir * (a.k - b.k);
      return a.i - b.i;
    })
    .map((x) => x.id);
}

describe('eval compare in a browser', () => {
  it('the built-in generator and the reference testbenches: compare.html shows the rows, the union and the chart, sorts the per-task table, nothing fetched', async () => {
    const suite = join(ROOT, 'bench/data/verilog-eval-v2');
    // Tasks on which the two rows differ (the built-in generator passes Prob153 under seed 9, the
    // reference testbench does not; the coverage of the others differs), so that sorting moves rows.
    const tasks = ['--tasks', 'Prob010,Prob068,Prob153,Prob156', '--samples', '1', '--rounds', '0', '--workers', '2'];
    cli(['eval', '--suite', suite, '--generator', 'builtin', '--seed', '9', ...tasks, '--out', join(tmp, 'row1')]);
    cli(['eval', '--suite', suite, '--reference', ...tasks, '--out', join(tmp, 'row2')]);
    const out = cli(['eval', 'compare', join(tmp, 'row1'), join(tmp, 'row2'), '--out', join(tmp, 'cmp')]);
    expect(out).toMatch(/oracle union\s+Pass@1\s+\d+\.\d%/);
    const page = join(tmp, 'cmp', 'compare.html');
    expect(existsSync(page)).toBe(true);
    const html = readFileSync(page, 'utf8');
    const c = JSON.parse(readFileSync(join(tmp, 'cmp', 'compare.json'), 'utf8')) as Comparison;
    // Nothing loaded from elsewhere: no src/href to an address, and no address at all but the SVG
    // namespace (an identifier, never fetched). The one script is inline.
    expect(html).not.toMatch(/\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?\/\//i);
    expect(html.replaceAll('xmlns="http://www.w3.org/2000/svg"', '')).not.toMatch(/https?:\/\//i);
    expect(html.match(/<script\b[^>]*>/gi)).toEqual(['<script>']);
    expect(html).toContain('<svg');

    const browser = await launchBrowser(join(tmp, 'chromium'));
    try {
      const p = await browser.newPage({ viewport: { width: 1300, height: 1100 } });
      const requests: string[] = [];
      const errors: string[] = [];
      p.on('request', (r) => {
        if (!r.url().startsWith('file://') && !r.url().startsWith('data:')) requests.push(r.url());
      });
      p.on('pageerror', (e) => errors.push(e.message));
      await p.goto(`file://${page}`);
      const text = await p.locator('body').innerText();
      expect(text.toLowerCase()).toContain('union');
      expect(text).toMatch(/Pass@1/);

      // The chart: Pass@1 and Cov@1 for each row and the union, with a legend (SVG text has no
      // innerText: its textContent).
      const svg = p.locator('svg');
      expect(await svg.count()).toBe(1);
      expect(await svg.locator('.legend text').allTextContents()).toEqual(['Pass@1', 'Cov@1']);
      expect(await svg.locator('rect.s-pass').count()).toBe(1 + 3); // the legend's swatch, two rows, the union
      expect(await svg.locator('rect.s-cov').count()).toBe(1 + 3); // the legend's swatch, two rows, the union

      // One per-task table, in task-id order until a header is clicked.
      expect(await p.locator('table#tasks').count()).toBe(1);
      const ids = (): Promise<string[]> => p.locator('#tasks tbody tr td:first-child').allInnerTexts();
      const heads = p.locator('#tasks thead th');
      const byId = c.tasks.map((t) => t.id);
      expect(await ids()).toEqual(byId);
      expect(await heads.nth(0).getAttribute('aria-sort')).toBe('ascending');

      // The built-in row's column: best coverage, ascending, then reversed.
      const cov = (t: Comparison['tasks'][number]): number | null => (t.cells[0].pass_at_1 === null ? null : t.cells[0].best_coverage);
      const asc = expectedOrder(c, cov, 1);
      expect(asc).not.toEqual(byId);
      await heads.nth(1).click();
      expect(await ids()).toEqual(asc);
      expect(await heads.nth(1).getAttribute('aria-sort')).toBe('ascending');
      expect(await heads.nth(0).getAttribute('aria-sort')).toBeNull();
      await heads.nth(1).click();
      expect(await ids()).toEqual(expectedOrder(c, cov, -1));
      expect(await heads.nth(1).getAttribute('aria-sort')).toBe('descending');

      // Rows passing (fewest first: the hard and the complementary tasks on top).
      const passing = p.locator('#tasks thead th', { hasText: 'rows passing' });
      await passing.click();
      const fewest = expectedOrder(c, (t) => t.passing.length, 1);
      expect(fewest).not.toEqual(byId);
      expect(await ids()).toEqual(fewest);
      expect(await passing.getAttribute('aria-sort')).toBe('ascending');
      expect(await heads.nth(1).getAttribute('aria-sort')).toBeNull();
      await p.screenshot({ path: join(SHOTS, 'eval-compare-html.png'), fullPage: true });

      // Back to task-id order (a header not sorted by: its first click sorts ascending).
      await heads.nth(0).click();
      expect(await ids()).toEqual(byId);
      expect(await heads.nth(0).getAttribute('aria-sort')).toBe('ascending');

      expect(errors).toEqual([]);
      expect(requests).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
