// The model options `generate`, `refine` and `eval` share: where the model is, how to sample.
import type { ModelConfig } from '../core/run/types.js';
import type { SamplingParams } from '../core/vocabulary/types.js';
import { DEFAULT_SAMPLING } from '../core/vocabulary/defaults.js';
import { numberOption } from './command.js';
import { existsSync } from 'node:fs';
import { findModels, modelsDir } from '../core/run/models.js';

export const MODEL_OPTIONS = {
  model: { type: 'string' },
  engine: { type: 'string' },
  dtype: { type: 'string' },
  threads: { type: 'string' },
  gpu: { type: 'string' },
  'no-lookup': { type: 'boolean' },
  'kv-cache': { type: 'string' },
  'allow-download': { type: 'boolean' },
  endpoint: { type: 'string' },
  'model-name': { type: 'string' },
  temperature: { type: 'string' },
  'top-p': { type: 'string' },
  'max-tokens': { type: 'string' },
  'context-length': { type: 'string' },
} as const;

export const MODEL_HELP = `Model (none: the built-in model-free generator):
  --model <dir>         local model directory, run in-process: a GGUF (model-q4_k_m.gguf, from
                        chorus-train export --gguf) and/or the transformers.js layout (config.json,
                        tokenizer, onnx/model_q4.onnx ...); or a .gguf file; or a model of the
                        cache by name, owner/name[:selector] (chorus model pull fetched it)
  --engine <e>          auto (default: llama.cpp when the folder has a GGUF, else ONNX) | llama | onnx
  --dtype <t>           fp32 | q4 | q4f16 for the ONNX engine (default q4)
  --threads <n>         CPU threads for a local model (default: the physical cores)
  --gpu <g>             auto (default: llama.cpp offloads to a GPU when a build for it loads, else
                        the CPU, with a message) | cpu
  --no-lookup           local model: no prompt-lookup drafting (the output is the same either way)
  --kv-cache <t>        llama.cpp KV cache: auto (default: f16, the fastest; q8_0, with a message,
                        when memory is short for the weights and an f16 cache at the context
                        limit, where the model's head size is a multiple of 32) | f16 | q8_0
                        (half the memory of f16: 0.5 GB less at 4B shapes and 8,192 tokens, but
                        slower prompt processing on the CPU; node-llama-cpp marks it experimental;
                        an error where it cannot run)
  --allow-download      let --model name a model to download (off: nothing leaves this machine)
  --endpoint <url>      OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, LM Studio),
                        e.g. http://127.0.0.1:8000/v1; API key from CHORUS_API_KEY or OPENAI_API_KEY
  --model-name <name>   served model name for --endpoint
  --temperature <t>     sampling temperature (default ${DEFAULT_SAMPLING.temperature})
  --top-p <p>           nucleus sampling (default ${DEFAULT_SAMPLING.topP})
  --max-tokens <n>      new tokens per reply (default ${DEFAULT_SAMPLING.maxNewTokens})
  --context-length <n>  the model's context when the server does not report it
`;

interface ModelValues {
  model?: string;
  engine?: string;
  dtype?: string;
  threads?: string;
  gpu?: string;
  'no-lookup'?: boolean;
  'kv-cache'?: string;
  'allow-download'?: boolean;
  endpoint?: string;
  'model-name'?: string;
  temperature?: string;
  'top-p'?: string;
  'max-tokens'?: string;
  'context-length'?: string;
}

/** The configured model, or null for the built-in generator. Throws a usage message on conflicts. */
export function modelConfig(v: ModelValues): ModelConfig | null {
  const ctx = v['context-length'] ? numberOption('context-length', v['context-length'], 0, 1, { integer: true }) : undefined;
  if (v.endpoint) {
    if (!v['model-name']) throw new Error('--endpoint needs --model-name (the name the server serves the model under)');
    if (v.model) throw new Error('give either --model <dir> (local) or --endpoint <url>, not both');
    return { kind: 'openai', baseUrl: v.endpoint, model: v['model-name'], contextLength: ctx };
  }
  if (v['model-name']) throw new Error('--model-name goes with --endpoint; for a local model directory use --model <dir>');
  if (!v.model) {
    if (v.engine || v.threads || v.gpu || v['no-lookup'] || v['kv-cache'])
      throw new Error('--engine, --threads, --gpu, --no-lookup and --kv-cache go with --model <dir>');
    return null;
  }
  const modelDir = cachedModel(v.model, v['allow-download'] ?? false);
  const dtype = v.dtype ?? 'q4';
  if (dtype !== 'fp32' && dtype !== 'q4' && dtype !== 'q4f16') throw new Error(`--dtype must be fp32, q4 or q4f16, got '${dtype}'`);
  const engine = v.engine ?? 'auto';
  if (engine !== 'auto' && engine !== 'llama' && engine !== 'onnx')
    throw new Error(`--engine must be auto, llama or onnx, got '${engine}'`);
  const gpu = v.gpu ?? 'auto';
  if (gpu !== 'auto' && gpu !== 'cpu') throw new Error(`--gpu must be auto or cpu, got '${gpu}'`);
  const threads = v.threads ? numberOption('threads', v.threads, 0, 1, { integer: true }) : undefined;
  const kvCache = v['kv-cache'] ?? 'auto';
  if (kvCache !== 'auto' && kvCache !== 'f16' && kvCache !== 'q8_0')
    throw new Error(`--kv-cache must be auto, f16 or q8_0, got '${kvCache}'`);
  return {
    kind: 'local',
    modelDir,
    engine,
    dtype,
    allowDownload: v['allow-download'] ?? false,
    contextLength: ctx,
    threads,
    gpu,
    lookup: !v['no-lookup'],
    kvCache,
  };
}

export function samplingFrom(v: ModelValues, seed?: number): SamplingParams {
  return {
    temperature: numberOption('temperature', v.temperature, DEFAULT_SAMPLING.temperature),
    topP: numberOption('top-p', v['top-p'], DEFAULT_SAMPLING.topP, 0, { above: true, max: 1 }),
    maxNewTokens: numberOption('max-tokens', v['max-tokens'], DEFAULT_SAMPLING.maxNewTokens, 1, { integer: true }),
    ...(seed !== undefined ? { seed } : {}),
  };
}

/** --model as a folder, or as owner/name[:selector] of the model cache (chorus model pull). */
function cachedModel(model: string, allowDownload: boolean): string {
  if (existsSync(model) || !/^[\w.-]+\/[\w.-]+(:\S+)?$/.test(model)) return model;
  let hits = findModels(model);
  // owner/name alone: a checkpoint and the GGUF converted from it are one model to run.
  if (hits.length > 1 && !model.includes(':') && hits.filter((m) => m.engine !== 'none').length === 1)
    hits = hits.filter((m) => m.engine !== 'none');
  if (hits.length > 1)
    throw new Error(
      `--model ${model} names ${hits.length} models of the cache (${hits.map((m) => `${m.repo}:${m.selector}`).join(', ')}): add :<selector>`,
    );
  if (hits.length === 1) {
    if (hits[0].engine === 'none')
      throw new Error(
        `${model} is a training checkpoint: convert it with chorus-train export ${hits[0].dir} <out folder> --gguf q4_k_m and use --model <out folder>`,
      );
    return hits[0].dir;
  }
  // A hub id the ONNX engine fetches itself (transformers.js) when downloads are allowed.
  if (allowDownload) return model;
  throw new Error(
    `--model ${model}: no such folder, and no model of that name in the cache (${modelsDir()}); fetch it with: chorus model pull ${model}`,
  );
}
