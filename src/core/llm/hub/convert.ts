// A pulled training checkpoint (safetensors, the form the LLM4Cov checkpoints are published in)
// made runnable: the training package's own exporter (`chorus-train export --gguf`, the one GGUF
// writer of the project) turns it into a GGUF with its chat template, which becomes a model of the
// cache beside the checkpoint. Used when the training package is present; otherwise the message
// names the command.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { runBounded } from '../../util/proc.js';
import { assetPath } from '../../util/assets.js';
import { entryPath, modelsDir, partialDir, readCachedModel, writeManifest, type CachedModel } from './cache.js';
import { HubError } from './spec.js';
import { digest } from './pull.js';

export const GGUF_TYPES = ['q4_k_m', 'q4_0', 'q8_0', 'f16'] as const;

/** `type` as the exporter takes it (lower case), or a bad-spec error naming the choices: checked
 * by every front end before anything is fetched, and by convertCheckpoint. */
export function ggufType(type: string): string {
  const t = type.toLowerCase();
  if (!(GGUF_TYPES as readonly string[]).includes(t))
    throw new HubError('bad-spec', `--convert takes one of ${GGUF_TYPES.join(', ')}, got '${type}'`);
  return t;
}

/** The training package's command line: CHORUS_TRAIN, else chorus-train on PATH, else the venv of
 * this checkout (training/.venv, what `npm run setup:training` makes). Null when none is there. */
export function findTrainingCli(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.CHORUS_TRAIN) return existsSync(env.CHORUS_TRAIN) ? env.CHORUS_TRAIN : null;
  for (const d of (env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const p = join(d, 'chorus-train');
    if (existsSync(p)) return p;
  }
  try {
    // dist/ (or src/core/sim/verilator) sits inside the checkout; the venv is at <checkout>/training/.venv.
    const main = assetPath('chorus_main.cpp', 'sim/verilator');
    for (let d = dirname(main), i = 0; i < 5; i++, d = dirname(d)) {
      const p = join(d, 'training', '.venv', 'bin', 'chorus-train');
      if (existsSync(p)) return p;
    }
  } catch {
    /* no checkout around */
  }
  return null;
}

/**
 * Converts the checkpoint `ckpt` (a model of the cache, kind `checkpoint`) to a GGUF of `type`
 * with `cli` (findTrainingCli()); returns the new model of the cache (selector `gguf-<type>`).
 * Cancel (signal) stops the exporter's whole process group and leaves nothing listed.
 */
export async function convertCheckpoint(
  ckpt: CachedModel,
  type: string,
  o: { cli: string; signal?: AbortSignal; modelsDir?: string },
): Promise<CachedModel> {
  const t = ggufType(type);
  if (ckpt.kind !== 'checkpoint') throw new HubError('bad-spec', `${ckpt.repo}:${ckpt.selector} is not a checkpoint; it runs as it is`);
  const root = o.modelsDir ?? modelsDir();
  const selector = `gguf-${t}`;
  const rel = entryPath(ckpt.repo, ckpt.commit, selector);
  const done = readCachedModel(join(root, rel));
  if (done) return done;
  const part = partialDir(root, rel);
  rmSync(part, { recursive: true, force: true });
  mkdirSync(part, { recursive: true });
  // GGUF only (no ONNX variants): the exporter still writes config.json and the tokenizer files
  // with the chat template inlined, which the llama.cpp engine reads beside the GGUF.
  const r = await runBounded(o.cli, ['export', ckpt.dir, part, '--dtypes', '', '--gguf', t], { signal: o.signal, graceS: 5 });
  if (r.cancelled || o.signal?.aborted) {
    rmSync(part, { recursive: true, force: true });
    throw new HubError('cancelled', `The conversion of ${ckpt.repo} was cancelled; the checkpoint stays in the cache.`);
  }
  if (r.exitCode !== 0 || r.spawnError) {
    rmSync(part, { recursive: true, force: true });
    const tail = (r.spawnError ?? r.all).trim().split('\n').slice(-3).join(' | ');
    throw new HubError('checkpoint', `chorus-train export failed on ${ckpt.dir} (${o.cli}, exit ${r.exitCode ?? r.signal}): ${tail}`);
  }
  // The exporter leaves an empty onnx/ folder when asked for no ONNX variant.
  if (existsSync(join(part, 'onnx')) && !readdirSync(join(part, 'onnx')).length) rmSync(join(part, 'onnx'), { recursive: true });
  const names = readdirSync(part).filter((f) => statSync(join(part, f)).isFile());
  if (!names.some((f) => f.endsWith('.gguf'))) throw new HubError('checkpoint', `chorus-train export wrote no GGUF into ${part}`);
  const files = await Promise.all(
    names.sort().map(async (path) => ({ path, size: statSync(join(part, path)).size, sha256: await digest(join(part, path), 'sha256') })),
  );
  writeManifest(part, {
    repo: ckpt.repo,
    revision: ckpt.revision,
    commit: ckpt.commit,
    endpoint: ckpt.endpoint,
    kind: 'gguf',
    selector,
    engine: 'llama',
    files,
    pulledAt: new Date().toISOString(),
    convertedFrom: ckpt.dir,
  });
  const dir = join(root, rel);
  rmSync(dir, { recursive: true, force: true });
  renameSync(part, dir);
  const m = readCachedModel(dir);
  if (!m) throw new HubError('checkpoint', `the converted model at ${dir} is incomplete`);
  return m;
}
