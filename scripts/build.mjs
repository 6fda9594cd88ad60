// Bundles the CLI (ESM, node) with esbuild. The C++ simulation main ships next to the bundle:
// the engine compiles it into every candidate.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, chmodSync, readdirSync } from 'node:fs';

// Native and heavy packages stay outside the bundle (onnxruntime-node breaks when bundled; see
// docs/environment.md) and are loaded from node_modules at run time.
const external = ['@huggingface/transformers', 'onnxruntime-node', 'onnxruntime-web', 'sharp', 'node-llama-cpp'];

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
  external,
  logLevel: 'warning',
});
chmodSync('dist/cli.js', 0o755);

// Every bench/*.ts script (npm run bench:*): same options as the CLI bundle, output dist/bench/<name>.js.
// `--cli-only` skips them (the test setup needs only the CLI).
const benches = Object.fromEntries(
  readdirSync('bench')
    .filter((f) => f.endsWith('.ts'))
    .map((f) => [`bench/${f.slice(0, -3)}`, `bench/${f}`]),
);
if (!process.argv.includes('--cli-only')) await build({
  entryPoints: benches,
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
  external,
  logLevel: 'warning',
});
if (watch) console.log('watch mode is not implemented; rerun npm run build');
