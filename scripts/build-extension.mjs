// Bundles the VS Code extension with esbuild:
//   dist/extension.cjs         extension host entry (CommonJS: package.json is "type": "module"; vscode external)
//   dist/extension-worker.mjs  the worker process running src/core (ESM, like the CLI bundle)
//   dist/webview.js            the dashboard UI (browser, @vscode-elements/elements inside)
// and copies the C++ simulation main the engine compiles into every candidate.
// Usage: node scripts/build-extension.mjs [--production]
import { build } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';

const production = process.argv.includes('--production');
// Native and heavy packages stay outside the bundles (onnxruntime-node breaks when bundled; see
// docs/environment.md) and ship in the VSIX's node_modules.
const external = ['vscode', 'onnxruntime-node', 'onnxruntime-web', 'sharp', 'node-llama-cpp'];

mkdirSync('dist', { recursive: true });
for (const f of ['chorus_main.cpp', 'chorus_model.cpp']) copyFileSync(`src/core/sim/verilator/${f}`, `dist/${f}`);

// Modules another change adds (the agent loop, the local backend): until they exist, the worker
// bundles a stub that says so instead of failing the build.
const optional = {
  'src/core/agent/loop.ts': 'export async function runAgent(){throw new Error("the agent loop is not in this build")}\nexport async function refineOnce(){throw new Error("the agent loop is not in this build")}',
  'src/core/llm/local.ts': 'export function createLocalBackend(){throw new Error("the local model backend is not in this build")}',
};
const stubMissing = {
  name: 'stub-missing',
  setup(b) {
    b.onResolve({ filter: /(agent\/loop|llm\/local)\.js$/ }, (args) => {
      const rel = args.path.endsWith('loop.js') ? 'src/core/agent/loop.ts' : 'src/core/llm/local.ts';
      if (existsSync(resolve(rel))) return undefined;
      console.warn(`build-extension: ${rel} is missing; bundling a stub`);
      return { path: rel, namespace: 'stub' };
    });
    b.onLoad({ filter: /.*/, namespace: 'stub' }, (args) => ({ contents: optional[args.path], loader: 'js' }));
  },
};
// sharp (image support) is never used for text models: an empty stub keeps its native binaries out.
const sharpStub = {
  name: 'sharp-stub',
  setup(b) {
    b.onResolve({ filter: /^sharp$/ }, () => ({ path: 'sharp', namespace: 'sharp-stub' }));
    b.onLoad({ filter: /.*/, namespace: 'sharp-stub' }, () => ({ contents: 'module.exports = {};', loader: 'js' }));
  },
};

const common = { bundle: true, sourcemap: !production, minify: production, logLevel: 'warning', legalComments: 'none' };

await Promise.all([
  build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.cjs',
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['vscode'],
  }),
  build({
    ...common,
    entryPoints: ['src/extension/worker.ts'],
    outfile: 'dist/extension-worker.mjs',
    platform: 'node',
    target: 'node20',
    format: 'esm',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    external: external.filter((e) => e !== 'sharp'),
    plugins: [stubMissing, sharpStub],
  }),
  build({
    ...common,
    entryPoints: ['webview/main.ts'],
    outfile: 'dist/webview.js',
    platform: 'browser',
    target: 'es2022',
    format: 'esm',
  }),
]);
console.log('build-extension: dist/extension.cjs, dist/extension-worker.mjs, dist/webview.js');

// --package: assemble out/vsix-stage and pack a linux-x64 VSIX with vsce (offline).
if (process.argv.includes('--package')) {
  const { cpSync, readFileSync, rmSync, writeFileSync, statSync } = await import('node:fs');
  const { execFileSync } = await import('node:child_process');
  const stage = resolve('out/vsix-stage');
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(`${stage}/dist/node_modules`, { recursive: true });
  const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
  for (const k of ['files', 'devDependencies', 'scripts', 'bin', 'dependencies']) delete pkg[k];
  pkg.repository = { type: 'git', url: 'https://example.invalid/chorus-testbench.git' };
  writeFileSync(`${stage}/package.json`, JSON.stringify(pkg, null, 2));
  copyFileSync('src/extension/README.md', `${stage}/README.md`); // the extension's own page: the repository README links into the repository
  copyFileSync('.vscodeignore', `${stage}/.vscodeignore`);
  cpSync('media', `${stage}/media`, { recursive: true });
  for (const f of ['extension.cjs', 'extension-worker.mjs', 'webview.js', 'chorus_main.cpp', 'chorus_model.cpp']) copyFileSync(`dist/${f}`, `${stage}/dist/${f}`);
  for (const m of ['onnxruntime-node', 'onnxruntime-common']) cpSync(`node_modules/${m}`, `${stage}/dist/node_modules/${m}`, { recursive: true, dereference: true });
  const out = resolve(process.env.CHORUS_VSIX ?? 'out/chorus-testbench-linux-x64.vsix');
  const vsce = resolve('node_modules/@vscode/vsce/vsce');
  execFileSync(process.execPath, [vsce, 'package', '--no-dependencies', '--target', 'linux-x64', '--skip-license', '--allow-missing-repository', '--allow-star-activation', '-o', out], { cwd: stage, stdio: 'inherit' });
  console.log(`build-extension: ${out} (${(statSync(out).size / 1048576).toFixed(1)} MiB)`);
}
