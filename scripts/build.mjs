// Bundles the CLI and every bench/*.ts script (ESM, node) with the project's one esbuild
// configuration (scripts/esbuild.config.mjs). The C++ simulation main ships next to the bundle:
// the engine compiles it into every candidate.
// Usage: node scripts/build.mjs [--cli-only]   (--cli-only skips the benches; the test setup needs only the CLI)
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, chmodSync, readdirSync } from 'node:fs';
import { nodeBundle } from './esbuild.config.mjs';

mkdirSync('dist', { recursive: true });
for (const f of ['chorus_main.cpp', 'chorus_model.cpp']) copyFileSync(`src/core/sim/verilator/${f}`, `dist/${f}`);
for (const f of ['slang_facts.py', 'slang_integrity.py']) copyFileSync(`src/core/sim/slang/${f}`, `dist/${f}`);
copyFileSync('src/core/sim/formal/formal_reach.py', 'dist/formal_reach.py');

await build(nodeBundle({ entryPoints: { cli: 'src/cli/main.ts' }, outdir: 'dist', executable: true }));
chmodSync('dist/cli.js', 0o755);

// npm run bench:<name> runs dist/bench/<name>.js.
if (!process.argv.includes('--cli-only')) {
  const benches = Object.fromEntries(
    readdirSync('bench')
      .filter((f) => f.endsWith('.ts'))
      .map((f) => [`bench/${f.slice(0, -3)}`, `bench/${f}`]),
  );
  await build(nodeBundle({ entryPoints: benches, outdir: 'dist', executable: true }));
}
