// A model reference to the folder an engine loads, in one place for every front end (the CLI's
// --model, the editor's chorus.model.localPath, the worker): a folder or .gguf file as it is, else
// owner/name[:selector] of the per-machine model cache (`chorus model pull`, "CHORUS: Download a
// Model..."), else, where downloads are allowed, a hub id the ONNX engine fetches itself.
import { existsSync } from 'node:fs';
import { findModels, modelsDir } from './hub/cache.js';

/** The folder (or file) `ref` names; throws a message naming the fix when it names none or several. */
export function resolveModelRef(ref: string, opts: { allowDownload: boolean; modelsDir?: string }): string {
  if (existsSync(ref) || !/^[\w.-]+\/[\w.-]+(:\S+)?$/.test(ref)) return ref;
  const root = opts.modelsDir ?? modelsDir();
  let hits = findModels(ref, root);
  // owner/name alone: a checkpoint and the GGUF converted from it are one model to run.
  if (hits.length > 1 && !ref.includes(':') && hits.filter((m) => m.engine !== 'none').length === 1)
    hits = hits.filter((m) => m.engine !== 'none');
  if (hits.length > 1)
    throw new Error(
      `model ${ref} names ${hits.length} models of the cache (${hits.map((m) => `${m.repo}:${m.selector}`).join(', ')}): add :<selector>`,
    );
  if (hits.length === 1) {
    if (hits[0].engine === 'none')
      throw new Error(
        `${ref} is a training checkpoint: convert it with chorus-train export ${hits[0].dir} <out folder> --gguf q4_k_m and use that folder`,
      );
    return hits[0].dir;
  }
  if (opts.allowDownload) return ref;
  throw new Error(
    `model ${ref}: no such folder, and no model of that name in the cache (${root}); fetch it with: chorus model pull ${ref}`,
  );
}
