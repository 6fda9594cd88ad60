// Layers that point one way: a module of src/core imports only from its own layer or the layers
// below it (README, "Layout"). A new upward import fails here; fix it by moving the shared piece
// down, not by adding an exception.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const CORE = resolve(import.meta.dirname, '..', '..', 'src', 'core');

/** Lowest first. */
const LAYERS = ['util', 'design', 'coverage', 'sim', 'llm', 'agent', 'generate', 'run', 'eval', 'service'];

/** Known upward imports, `from -> to` (paths under src/core), each with the reason it stays. */
const EXCEPTIONS: Record<string, string> = {
  // Introspection runs Verilator's front end; its toolchain and message parser live under sim/verilator.
  'design/introspect.ts -> sim/verilator/toolchain.ts': 'Verilator toolchain lookup',
  'design/introspect.ts -> sim/verilator/diagnostics.ts': 'Verilator message parser',
  'design/errors.ts -> sim/result.ts': 'the Diagnostic type (type-only)',
  // The chat message type belongs to the protocol; the local engines are being reworked (issue 17).
};

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Relative specifiers of `import ... from`, `export ... from`, `import '...'` and `import('...')`. */
export function importsOf(src: string): string[] {
  const out: string[] = [];
  for (const m of src.matchAll(/^\s*(?:import|export)\b[^;'"]*?(?:\bfrom\s*)?['"]([^'"]+)['"]/gm)) out.push(m[1]);
  for (const m of src.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1]);
  return out.filter((s) => s.startsWith('.'));
}

const layerOf = (rel: string): string => rel.split('/')[0];

function upwardImports(): string[] {
  const found: string[] = [];
  for (const file of tsFiles(CORE)) {
    const from = relative(CORE, file).replaceAll('\\', '/');
    for (const spec of importsOf(readFileSync(file, 'utf8'))) {
      const to = relative(CORE, resolve(dirname(file), spec))
        .replaceAll('\\', '/')
        .replace(/\.js$/, '.ts');
      if (to.startsWith('..')) {
        found.push(`${from} -> ${to} (outside src/core)`);
        continue;
      }
      if (LAYERS.indexOf(layerOf(to)) > LAYERS.indexOf(layerOf(from))) found.push(`${from} -> ${to}`);
    }
  }
  return found.sort();
}

describe('src/core layers', () => {
  it('every folder of src/core has a place in the table', () => {
    const dirs = readdirSync(CORE, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(dirs.filter((d) => !LAYERS.includes(d))).toEqual([]);
  });

  it('imports point down (or sideways), except the listed ones', () => {
    expect(upwardImports().filter((x) => !(x in EXCEPTIONS))).toEqual([]);
  });

  it('every listed exception still exists (remove it once fixed)', () => {
    const found = new Set(upwardImports());
    expect(Object.keys(EXCEPTIONS).filter((x) => !found.has(x))).toEqual([]);
  });

  it('reads the import forms the code uses', () => {
    expect(
      importsOf(
        "import { a } from '../x.js';\nimport type { B } from './y.js';\nexport { c } from '../z.js';\nimport 'node:fs';\nconst m = await import('../w.js');",
      ),
    ).toEqual(['../x.js', './y.js', '../z.js', '../w.js']);
  });
});
