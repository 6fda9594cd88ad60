// Which files of a hub repository make a model the engines run, as LM Studio lists them: each GGUF
// (a split GGUF's parts together) for llama.cpp; an ONNX export (transformers.js layout) per dtype
// for the ONNX engine; a safetensors checkpoint, which `chorus-train export` converts first. Pure:
// the listing comes from pull.ts.
import { HubError, kindLabel, type ModelKind } from './spec.js';
import { formatBytes } from '../../util/format.js';
import { DEFAULT_GGUF_QUANT } from '../../vocabulary/defaults.js';

export interface RemoteFile {
  path: string;
  size: number;
  /** SHA-256 of the content: the LFS oid (large files). */
  sha256?: string;
  /** Git blob id (SHA-1 of "blob <size>\0" + content): how small files are checked. */
  gitOid?: string;
}

export type CandidateKind = ModelKind;

export interface Candidate {
  kind: CandidateKind;
  /** What to write after `owner/repo:` to pick this one. */
  selector: string;
  /** The engine that runs it ('none' for a checkpoint: convert it first). */
  engine: 'llama' | 'onnx' | 'none';
  /** The files to fetch (the model files and the small files beside them). */
  files: RemoteFile[];
  /** Bytes to fetch. */
  size: number;
}

const SPLIT = /-(\d{5})-of-(\d{5})\.gguf$/i;
/** Small files every model folder takes along: the chat template (the protocol's exact format) and
 * the tokenizer and config the ONNX engine reads. */
const SIDE_FILES = [
  'config.json',
  'generation_config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'chat_template.jinja',
];
const ONNX_DTYPE: Record<string, string> = { 'model.onnx': 'fp32' };
const onnxDtype = (base: string): string => ONNX_DTYPE[base] ?? base.replace(/^model_/, '').replace(/\.onnx$/, '');

const sum = (fs: RemoteFile[]): number => fs.reduce((a, f) => a + f.size, 0);
const base = (p: string): string => p.slice(p.lastIndexOf('/') + 1);

/** Every model the listing holds: GGUFs first (by name), then ONNX dtypes, then a checkpoint. */
export function candidates(files: RemoteFile[]): Candidate[] {
  const side = files.filter((f) => SIDE_FILES.includes(f.path));
  const out: Candidate[] = [];
  // GGUF: one candidate per file, a split GGUF's parts as one; projector files (mmproj) are not models.
  const groups = new Map<string, RemoteFile[]>();
  for (const f of files) {
    if (!/\.gguf$/i.test(f.path) || /mmproj/i.test(base(f.path))) continue;
    const key = f.path.replace(SPLIT, '.gguf');
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  for (const [key, parts] of [...groups].sort(([a], [b]) => a.localeCompare(b))) {
    parts.sort((a, b) => a.path.localeCompare(b.path));
    const tpl = side.filter((f) => f.path === 'tokenizer_config.json');
    out.push({ kind: 'gguf', selector: key, engine: 'llama', files: [...parts, ...tpl], size: sum(parts) + sum(tpl) });
  }
  // ONNX export: onnx/model*.onnx with its external-data files, plus the side files.
  const onnx = files.filter((f) => /^onnx\/model[\w-]*\.onnx$/i.test(f.path)).sort((a, b) => a.path.localeCompare(b.path));
  if (onnx.length && side.some((f) => f.path === 'config.json') && side.some((f) => f.path === 'tokenizer.json')) {
    // External-data files carry the dtype's suffix (embed_tokens_q4.onnx_data, model_q4.onnx_data);
    // those without one (model.onnx_data) belong to fp32 model.onnx.
    const dtypes = new Set(onnx.map((m) => onnxDtype(base(m.path))));
    const dataDtype = (p: string): string => {
      const stem = base(p).replace(/\.onnx(_data|\.data)$|_data$/, '');
      const suffix = stem.slice(stem.lastIndexOf('_') + 1);
      return dtypes.has(suffix) && stem.includes('_') ? suffix : 'fp32';
    };
    const dataFiles = files.filter((f) => f.path.startsWith('onnx/') && /(\.onnx_data|\.onnx\.data|_data)$/.test(f.path));
    for (const m of onnx) {
      const data = dataFiles.filter((f) => dataDtype(f.path) === onnxDtype(base(m.path)));
      const fs = [m, ...data, ...side];
      out.push({ kind: 'onnx', selector: onnxDtype(base(m.path)), engine: 'onnx', files: fs, size: sum(fs) });
    }
  }
  // A training checkpoint (the form the LLM4Cov checkpoints are published in).
  const weights = files.filter((f) => /\.safetensors$/i.test(f.path) || f.path === 'model.safetensors.index.json');
  if (weights.some((f) => f.path.endsWith('.safetensors')) && side.some((f) => f.path === 'config.json')) {
    const fs = [...weights, ...side];
    out.push({ kind: 'checkpoint', selector: 'checkpoint', engine: 'none', files: fs, size: sum(fs) });
  }
  return out;
}

/** Whole-token match of a quantization in a file name: Q4_K_M in model.Q4_K_M.gguf or model-q4_k_m.gguf. */
function hasQuant(path: string, q: string): boolean {
  const esc = q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^a-z0-9])${esc}([^a-z0-9]|$)`, 'i').test(base(path));
}

export interface PickDefaults {
  quant: string;
  onnxDtype: string;
}

export const describeCandidate = (c: Candidate): string => `${c.selector} (${kindLabel(c.kind)}, ${formatBytes(c.size)})`;

/**
 * The candidate `selector` names (a quantization, a file path, an ONNX dtype, `checkpoint`), or
 * with none: the only runnable one, else the default quantization, else the default ONNX dtype.
 * A repository with only a checkpoint is HubError('checkpoint') unless `checkpoint` is asked for;
 * several fits or none are HubError('ambiguous') listing the choices.
 */
export function pick(repo: string, all: Candidate[], selector: string | undefined, d: PickDefaults): Candidate {
  const runnable = all.filter((c) => c.engine !== 'none');
  const choices = all.map((c) => c.selector);
  const list = all.map(describeCandidate).join(', ');
  if (selector) {
    const s = selector.toLowerCase();
    const exact = all.filter(
      (c) => c.selector.toLowerCase() === s || c.files.some((f) => f.path.toLowerCase() === s && c.kind !== 'checkpoint'),
    );
    const fits = exact.length ? exact : all.filter((c) => c.kind === 'gguf' && hasQuant(c.selector, selector));
    if (fits.length === 1) return fits[0];
    if (!all.length) throw noModel(repo);
    throw new HubError(
      'ambiguous',
      fits.length
        ? `'${selector}' fits several files of ${repo}: ${fits.map(describeCandidate).join(', ')}; name one, e.g. ${repo}:${fits[0].selector}`
        : `${repo} has nothing that fits '${selector}'; it has: ${list}`,
      (fits.length ? fits : all).map((c) => c.selector),
    );
  }
  if (!runnable.length) {
    if (all.length) throw checkpointOnly(repo);
    throw noModel(repo);
  }
  if (runnable.length === 1) return runnable[0];
  const byQuant = runnable.filter((c) => c.kind === 'gguf' && hasQuant(c.selector, d.quant));
  if (byQuant.length === 1) return byQuant[0];
  if (!runnable.some((c) => c.kind === 'gguf')) {
    const byDtype = runnable.filter((c) => c.selector.toLowerCase() === d.onnxDtype.toLowerCase());
    if (byDtype.length === 1) return byDtype[0];
  }
  throw new HubError('ambiguous', `${repo} holds several models: ${list}. Name one: ${repo}:${runnable[0].selector}`, choices);
}

const noModel = (repo: string): HubError =>
  new HubError(
    'no-usable-file',
    `${repo} holds no model the engines run: no .gguf file (llama.cpp), no ONNX export (onnx/model*.onnx with config.json and tokenizer.json) and no safetensors checkpoint`,
  );

export const checkpointOnly = (repo: string): HubError =>
  new HubError(
    'checkpoint',
    `${repo} is a training checkpoint (safetensors), which the engines do not run as it is. ` +
      `Fetch and convert it to a GGUF in one step: chorus model pull ${repo} --convert ${DEFAULT_GGUF_QUANT.toLowerCase()} ` +
      `(this needs the training package: chorus-train on PATH, or CHORUS_TRAIN naming it; see training/README.md)`,
    ['checkpoint'],
  );
