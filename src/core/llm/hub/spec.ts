// What a user types to name a model on the hub, and the errors of fetching one. Forms accepted
// (those of LM Studio, Ollama and llama.cpp's -hf): `owner/repo`, `owner/repo:Q4_K_M` (a
// quantization, any case), `owner/repo:path/in/repo.gguf` (one file), `owner/repo:q4` (an ONNX
// export's dtype), with an optional `hf:` / `hf.co/` / hub-URL prefix.

export type HubErrorKind =
  /** 401/403: the repository is gated or private and no (or a refused) token was given. */
  | 'auth'
  /** 404: no such repository, revision or file. */
  | 'not-found'
  /** The repository holds nothing the engines run (no GGUF, no ONNX export). */
  | 'no-usable-file'
  /** The repository holds a training checkpoint (safetensors) that must be converted first. */
  | 'checkpoint'
  /** Several files fit and the user named none (the message lists them). */
  | 'ambiguous'
  /** A downloaded file's SHA-256 is not the hub's: the file was removed. */
  | 'hash-mismatch'
  /** The hub could not be reached or answered something unexpected. */
  | 'network'
  | 'bad-spec'
  /** Another pull of the same model is under way (the CLI and the editor at once). */
  | 'busy'
  | 'cancelled';

export class HubError extends Error {
  constructor(
    readonly kind: HubErrorKind,
    message: string,
    /** For `ambiguous`: the selectors that would pick one (`owner/repo:<selector>`). */
    readonly choices: string[] = [],
  ) {
    super(message);
    this.name = 'HubError';
  }
}

/** What a model of a repository is: a GGUF (llama.cpp), an ONNX export, a training checkpoint. */
export type ModelKind = 'gguf' | 'onnx' | 'checkpoint';

/** How every front end names a kind. */
export const kindLabel = (k: ModelKind): string => (k === 'gguf' ? 'GGUF, llama.cpp' : k === 'onnx' ? 'ONNX' : 'safetensors checkpoint');

export interface ModelRef {
  /** owner/name */
  repo: string;
  /** The part after `:` (a quantization, a file path, an ONNX dtype), if any. */
  selector?: string;
}

const REPO = /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/;

/** Parses `owner/repo[:selector]`; throws HubError('bad-spec') naming the accepted forms. */
export function parseModelRef(text: string): ModelRef {
  let s = text.trim();
  s = s.replace(/^(hf|huggingface):(\/\/)?/i, '').replace(/^(https?:\/\/)?(www\.)?(hf\.co|huggingface\.co)\//i, '');
  const colon = s.indexOf(':');
  const repo = (colon < 0 ? s : s.slice(0, colon)).replace(/\/+$/, '');
  const selector = colon < 0 ? undefined : s.slice(colon + 1).trim() || undefined;
  if (!REPO.test(repo) || repo.includes('..'))
    throw new HubError(
      'bad-spec',
      `'${text}' is not a model repository: write owner/name, optionally with a quantization or a file (owner/name:Q4_K_M, owner/name:model.Q8_0.gguf)`,
    );
  if (selector && (selector.split('/').includes('..') || selector.startsWith('/')))
    throw new HubError('bad-spec', `'${selector}' is not a file inside the repository`);
  return { repo, ...(selector ? { selector } : {}) };
}

/** The hub's base URL: HF_ENDPOINT (mirrors, tests), else the public hub. No trailing slash. */
export function hubEndpoint(env: Record<string, string | undefined>, fallback: string): string {
  const e = env.HF_ENDPOINT?.trim();
  return (e && /^https?:\/\//i.test(e) ? e : fallback).replace(/\/+$/, '');
}
