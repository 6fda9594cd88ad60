// Bundles the CLI (ESM, node) with esbuild. The C++ simulation main ships next to the bundle:
// the engine compiles it into every candidate.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, chmodSync } from 'node:fs';

const watch = process.argv.includes('--watch');
mkdirSync('dist', { recursive: true });
for (const f of ['chorus_main.cpp', 'chorus_model.cpp']) copyFileSync(`src/core/sim/verilator/${f}`, `dist/${f}`);

await build({
  entryPoints: { cli: 'src/cli/main.ts' },
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  outExtension: { '.js': '.js' },
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
  },
  logLevel: 'warning',
});
chmodSync('dist/cli.js', 0o755);

// bench/sim (npm run bench:sim): same options as the CLI bundle, output dist/bench/sim.js.
// `--cli-only` skips it (the test setup needs only the CLI).
if (!process.argv.includes('--cli-only')) await build({
  entryPoints: { 'bench/sim': 'bench/sim.ts', 'bench/verilog-eval-generator': 'bench/verilog-eval-generator.ts' },
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  outExtension: { '.js': '.js' },
  banner: {
    js: "#!/usr/bin/env node\nimport { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
  },
  logLevel: 'warning',
});
if (watch) console.log('watch mode is not implemented; rerun npm run build');
