// Bundles the VS Code extension with esbuild:
//   dist/extension.cjs         extension host entry (CommonJS: package.json is "type": "module"; vscode external)
//   dist/extension-worker.mjs  the worker process running src/core (ESM, like the CLI bundle), from
//                              src/extension/worker/process/main.ts
//   dist/webview.js            the dashboard UI (browser, @vscode-elements/elements inside)
// and copies the C++ simulation main the engine compiles into every candidate.
// Usage: node scripts/build-extension.mjs [--production] [--watch] [--package]
//   --watch  rebuilds the three bundles on every change under src/ and webview/ (the launch
//            configuration in .vscode/ runs it as a background task before the Extension
//            Development Host starts); it prints "[watch] build started/finished" for the task's
//            problem matcher.
import { build, context } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { NATIVE_EXTERNALS, browserBundle, nodeBundle } from './esbuild.config.mjs';
import { runtimeClosure, topLevel } from './runtime-deps.mjs';

const production = process.argv.includes('--production');

mkdirSync('dist', { recursive: true });
for (const f of ['chorus_main.cpp', 'chorus_model.cpp']) copyFileSync(`src/core/sim/verilator/${f}`, `dist/${f}`);
for (const f of ['slang_facts.py', 'slang_integrity.py']) copyFileSync(`src/core/sim/slang/${f}`, `dist/${f}`);
copyFileSync('src/core/sim/formal/formal_reach.py', 'dist/formal_reach.py');

const bundles = [
  // The extension host loads CommonJS (package.json is "type": "module"); only `vscode` is external.
  nodeBundle({ entryPoints: ['src/extension.ts'], outfile: 'dist/extension.cjs', format: 'cjs', production, external: ['vscode'] }),
  // The worker bundles transformers.js (pure JS) and loads only the native packages from the VSIX's
  // dist/node_modules.
  nodeBundle({
    entryPoints: ['src/extension/worker/process/main.ts'],
    outfile: 'dist/extension-worker.mjs',
    production,
    external: NATIVE_EXTERNALS.filter((e) => e !== '@huggingface/transformers'),
  }),
  browserBundle({ entryPoints: ['webview/main.ts'], outfile: 'dist/webview.js', production }),
];

if (process.argv.includes('--watch')) {
  // One start/finish pair per rebuild of any bundle, errors in esbuild's own format (file:line:col).
  let running = 0;
  const reporter = {
    name: 'watch-reporter',
    setup(b) {
      b.onStart(() => {
        if (running++ === 0) console.log('[watch] build started');
      });
      b.onEnd(() => {
        if (--running === 0) console.log('[watch] build finished');
      });
    },
  };
  const contexts = await Promise.all(bundles.map((o) => context({ ...o, plugins: [...(o.plugins ?? []), reporter] })));
  await Promise.all(contexts.map((c) => c.watch()));
  console.log('build-extension: watching src/ and webview/ (Ctrl-C stops)');
  process.on('SIGINT', async () => {
    await Promise.all(contexts.map((c) => c.dispose()));
    process.exit(0);
  });
} else {
  await Promise.all(bundles.map((o) => build(o)));
  console.log('build-extension: dist/extension.cjs, dist/extension-worker.mjs, dist/webview.js');
}

// --package: assemble out/vsix-stage and pack a linux-x64 VSIX with vsce (offline).
if (process.argv.includes('--package') && !process.argv.includes('--watch')) {
  const { cpSync, lstatSync, readFileSync, rmSync, writeFileSync, statSync } = await import('node:fs');
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
  cpSync('syntaxes', `${stage}/syntaxes`, { recursive: true }); // grammars + language configuration
  // "Open an Example Design" copies these into the workspace. Never the run folders a developer's
  // own runs left beside them (chorus-out: core/run/runFolder.ts RUN_ROOT), nor links (its
  // `latest` link to a folder stopped vsce's secret scan with EISDIR).
  cpSync('examples', `${stage}/examples`, {
    recursive: true,
    filter: (src) => basename(src) !== 'chorus-out' && !lstatSync(src).isSymbolicLink(),
  });
  for (const f of [
    'extension.cjs',
    'extension-worker.mjs',
    'webview.js',
    'chorus_main.cpp',
    'chorus_model.cpp',
    'slang_facts.py',
    'slang_integrity.py',
    'formal_reach.py',
  ])
    copyFileSync(`dist/${f}`, `${stage}/dist/${f}`);
  // The llama.cpp engine: node-llama-cpp with what it imports at run time and its linux-x64 CPU
  // build (@node-llama-cpp/linux-x64, 29 MB). The CUDA and Vulkan builds (180-360 MB each) stay out:
  // the VSIX targets linux-x64 CPU, and `auto` falls back to the CPU when no GPU build is there.
  const llamaDeps = topLevel(
    runtimeClosure('.', 'node-llama-cpp', {
      platform: 'linux',
      arch: 'x64',
      skipOptional: (d) => d.startsWith('@node-llama-cpp/') && d !== '@node-llama-cpp/linux-x64',
    }),
  );
  for (const m of ['onnxruntime-node', 'onnxruntime-common', ...llamaDeps])
    cpSync(`node_modules/${m}`, `${stage}/dist/node_modules/${m}`, { recursive: true, dereference: true });
  const out = resolve(process.env.CHORUS_VSIX ?? 'out/chorus-testbench-linux-x64.vsix');
  const vsce = resolve('node_modules/@vscode/vsce/vsce');
  execFileSync(
    process.execPath,
    [
      vsce,
      'package',
      '--no-dependencies',
      '--target',
      'linux-x64',
      '--skip-license',
      '--allow-missing-repository',
      '--allow-star-activation',
      '-o',
      out,
    ],
    { cwd: stage, stdio: 'inherit' },
  );
  console.log(`build-extension: ${out} (${(statSync(out).size / 1048576).toFixed(1)} MiB)`);
}
