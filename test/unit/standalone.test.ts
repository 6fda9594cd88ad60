// The repository stands alone: a user's clone has nothing beside it, so no file may read or cite a
// folder outside the checkout (the team's sibling `shared` folder in particular).
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { repoRoot } from '../helpers.js';

const ROOTS = ['src', 'test', 'bench', 'scripts', 'training', 'docs', 'webview', '.ci', 'README.md', 'package.json'];
const SKIP_DIRS = new Set(['node_modules', '.venv', '__pycache__', 'dist', 'out', '.chorus-cache', '.pytest_cache']);
const TEXT = /\.(ts|tsx|js|mjs|cjs|json|md|py|sh|ya?ml|toml|txt|cpp|h|sv|v|svh|html|css|cfg|ini|f)$|^run$/;
// Built from parts so that this file does not match itself.
const SIBLING = ['..', ['sha', 'red'].join('')];
const NEEDLES = [SIBLING.join('/'), SIBLING.join('\\\\'), SIBLING.map((s) => `'${s}'`).join(', '), SIBLING.map((s) => `"${s}"`).join(', ')];

function* textFiles(p: string): Generator<string> {
  const st = statSync(p, { throwIfNoEntry: false });
  if (!st) return;
  if (st.isFile()) {
    if (TEXT.test(p.split('/').pop() ?? '') && st.size < 2_000_000) yield p;
    return;
  }
  for (const e of readdirSync(p)) if (!SKIP_DIRS.has(e)) yield* textFiles(join(p, e));
}

describe('the repository stands alone', () => {
  it('no file under src, test, bench, scripts, training, docs (or the README) reads or cites a sibling shared folder', () => {
    const hits: string[] = [];
    for (const root of ROOTS) {
      for (const f of textFiles(join(repoRoot, root))) {
        const lines = readFileSync(f, 'utf8').split('\n');
        lines.forEach((l, i) => {
          if (NEEDLES.some((n) => l.includes(n))) hits.push(`${relative(repoRoot, f)}:${i + 1}: ${l.trim().slice(0, 120)}`);
        });
      }
    }
    expect(hits, `copy what these need into the repository (bench/data, docs/) and point them there:\n${hits.join('\n')}`).toEqual([]);
  });

  it('the check finds a planted reference (it can fail)', () => {
    const planted = `const p = resolve(${SIBLING.map((s) => `'${s}'`).join(', ')}, 'docs');`;
    expect(NEEDLES.some((n) => planted.includes(n))).toBe(true);
    expect(NEEDLES.some((n) => `see ${SIBLING.join('/')}/docs/x.md`.includes(n))).toBe(true);
  });
});
