// The editor's worker as the editor runs it, for integration tests: a bundle of
// src/extension/worker/process/main.ts forked with an IPC channel (WorkerClient). Built under out/
// (git-ignored) so that its external packages resolve from node_modules; stopWorker leaves no
// process behind.
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { execa } from 'execa';
import { repoRoot } from '../helpers.js';
import { WorkerClient } from '../../src/extension/worker/client.js';

export interface BundledWorker {
  client: WorkerClient;
  dir: string;
}

/** `env` is added to the worker's environment (the editor's settings reach it the same way). */
export async function startWorker(name: string, env: NodeJS.ProcessEnv = {}): Promise<BundledWorker> {
  const dir = join(repoRoot, 'out', `${name}-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  // esbuild runs in a plain Node child: inside the test runner its target parsing trips over the
  // runner's environment.
  const options = {
    entryPoints: [join(repoRoot, 'src', 'extension', 'worker', 'process', 'main.ts')],
    outfile: join(dir, 'extension-worker.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    define: { __CHORUS_VERSION__: JSON.stringify('test') },
    external: ['@huggingface/transformers', 'onnxruntime-node', 'onnxruntime-web', 'node-llama-cpp', 'sharp'],
  };
  await execa(
    process.execPath,
    ['--input-type=module', '-e', `import { build } from 'esbuild'; await build(${JSON.stringify(options)});`],
    {
      cwd: repoRoot,
    },
  );
  for (const f of ['chorus_main.cpp', 'chorus_model.cpp']) copyFileSync(join(repoRoot, 'src', 'core', 'sim', 'verilator', f), join(dir, f));
  return { client: new WorkerClient(join(dir, 'extension-worker.mjs'), () => env), dir };
}

/** Disconnects the worker, waits for its process to exit, removes its bundle. */
export async function stopWorker(w: BundledWorker | undefined): Promise<void> {
  if (!w) return;
  const child = (w.client as unknown as { child: ChildProcess | null }).child;
  const exited = child && child.exitCode === null ? new Promise((ok) => child.once('exit', ok)) : Promise.resolve();
  w.client.dispose();
  await exited;
  rmSync(w.dir, { recursive: true, force: true });
}
