// Layers that point one way: a module of src/core imports only from its own layer or the layers
// below it (README, "Layout"), and the front ends (the CLI, the editor, the webview, the
// benchmarks) reach the engine only through src/core/run/ and the engine's types. A new upward
// import, or a front end reaching past core/run, fails here; fix it by moving the shared piece down
// or by exporting it from core/run, never by an exception.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CORE = join(ROOT, 'src', 'core');

/** Lowest first. `vocabulary` is the bottom: the settings schema, defaults, enums and the types
 * every layer and front end shares; `run` is the top: the one layer every front end calls. */
const LAYERS = ['vocabulary', 'util', 'design', 'coverage', 'sim', 'llm', 'agent', 'generate', 'eval', 'service', 'run'];

/** Where a front end may import from: the top (behaviour) and the bottom (words and types). */
const FRONT_DOORS = ['run', 'vocabulary'];

/** The front ends, relative to the repository root. */
const FRONT_ENDS = ['src/cli', 'src/extension', 'src/extension.ts', 'webview', 'bench'];

function tsFiles(path: string): string[] {
  if (path.endsWith('.ts')) return [path];
  return readdirSync(path, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(path, e.name)) : e.name.endsWith('.ts') ? [join(path, e.name)] : [],
  );
}

export interface ImportRef {
  spec: string;
  /** `import type`, `export type`, or named imports that are all `type X`: erased at build time. */
  typeOnly: boolean;
}

/** Relative imports of `import ... from`, `export ... from`, `import '...'` and `import('...')`. */
export function importRefs(src: string): ImportRef[] {
  const out: ImportRef[] = [];
  for (const m of src.matchAll(/^\s*(import|export)\b([^;'"]*?)(?:\bfrom\s*)?['"]([^'"]+)['"]/gm)) {
    const clause = m[2].trim();
    const named = /^\{([^}]*)\}$/.exec(clause);
    const typeOnly =
      /^type\b/.test(clause) ||
      (named !== null &&
        named[1]
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
          .every((s) => s.startsWith('type ')));
    out.push({ spec: m[3], typeOnly });
  }
  for (const m of src.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push({ spec: m[1], typeOnly: false });
  return out.filter((r) => r.spec.startsWith('.'));
}

export const importsOf = (src: string): string[] => importRefs(src).map((r) => r.spec);

const layerOf = (rel: string): string => rel.split('/')[0];
const target = (file: string, spec: string): string =>
  relative(CORE, resolve(dirname(file), spec))
    .replaceAll('\\', '/')
    .replace(/\.js$/, '.ts');

function upwardImports(): string[] {
  const found: string[] = [];
  for (const file of tsFiles(CORE)) {
    const from = relative(CORE, file).replaceAll('\\', '/');
    for (const { spec } of importRefs(readFileSync(file, 'utf8'))) {
      const to = target(file, spec);
      if (to.startsWith('..')) found.push(`${from} -> ${to} (outside src/core)`);
      else if (LAYERS.indexOf(layerOf(to)) > LAYERS.indexOf(layerOf(from))) found.push(`${from} -> ${to}`);
    }
  }
  return found.sort();
}

/** Imports of a front end (types included) that land in src/core outside core/run and the vocabulary. */
function frontEndReach(): string[] {
  const found: string[] = [];
  for (const file of FRONT_ENDS.flatMap((p) => tsFiles(join(ROOT, p)))) {
    for (const { spec } of importRefs(readFileSync(file, 'utf8'))) {
      const to = target(file, spec);
      if (to.startsWith('..') || FRONT_DOORS.includes(layerOf(to))) continue;
      found.push(`${relative(ROOT, file)} -> core/${to}`);
    }
  }
  return found.sort();
}

/** Every import cycle among the TypeScript files of src/, bench/ and webview/, each as `a -> b -> a`. */
export function importCycles(): string[] {
  const files = ['src', 'bench', 'webview'].flatMap((p) => tsFiles(join(ROOT, p)));
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const from = relative(ROOT, file).replaceAll('\\', '/');
    const tos = importRefs(readFileSync(file, 'utf8')).map((r) =>
      relative(ROOT, resolve(dirname(file), r.spec))
        .replaceAll('\\', '/')
        .replace(/\.js$/, '.ts'),
    );
    edges.set(from, tos);
  }
  const cycles = new Set<string>();
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (!edges.has(next)) continue;
      if (state.get(next) === 'open') {
        const ring = stack.slice(stack.indexOf(next));
        // Start the ring at its smallest name so one cycle is reported once.
        const at = ring.indexOf([...ring].sort()[0]);
        const rotated = [...ring.slice(at), ...ring.slice(0, at)];
        cycles.add([...rotated, rotated[0]].join(' -> '));
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...edges.keys()].sort()) if (!state.has(node)) visit(node);
  return [...cycles].sort();
}

describe('src/core layers', () => {
  it('every folder of src/core has a place in the table', () => {
    const dirs = readdirSync(CORE, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(dirs.filter((d) => !LAYERS.includes(d))).toEqual([]);
  });

  it('imports point down (or sideways)', () => {
    expect(upwardImports()).toEqual([]);
  });

  it('the vocabulary imports nothing of the engine', () => {
    const refs = tsFiles(join(CORE, 'vocabulary')).flatMap((f) =>
      importRefs(readFileSync(f, 'utf8')).map((r) => ({ file: relative(CORE, f), to: target(f, r.spec) })),
    );
    expect(refs.filter((r) => layerOf(r.to) !== 'vocabulary')).toEqual([]);
  });

  it('no file imports itself back, in any folder of src/, bench/ or webview/ (types included)', () => {
    expect(importCycles()).toEqual([]);
  });

  it('the CLI, the editor, the webview and the benchmarks reach the engine only through core/run and the vocabulary, types included', () => {
    expect(frontEndReach()).toEqual([]);
  });

  it('reads the import forms the code uses', () => {
    const refs = importRefs(
      "import { a } from '../x.js';\nimport type { B } from './y.js';\nexport { c } from '../z.js';\nimport 'node:fs';\nconst m = await import('../w.js');\n" +
        "import { type D, type E } from './v.js';\nimport { type F, g } from './u.js';\nexport type { H } from './t.js';\nimport {\n  i,\n  type J,\n} from './s.js';",
    );
    expect(refs).toEqual([
      { spec: '../x.js', typeOnly: false },
      { spec: './y.js', typeOnly: true },
      { spec: '../z.js', typeOnly: false },
      { spec: './v.js', typeOnly: true },
      { spec: './u.js', typeOnly: false },
      { spec: './t.js', typeOnly: true },
      { spec: './s.js', typeOnly: false },
      { spec: '../w.js', typeOnly: false },
    ]);
  });
});
