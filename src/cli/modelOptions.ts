// The model options `generate`, `refine` and `eval` share: where the model is, how to sample.
import type { ModelConfig } from '../core/run/types.js';
import type { SamplingParams } from '../core/vocabulary/types.js';
import { flags, strings, numberOption } from './command.js';
import { resolveModelRef } from '../core/run/models.js';
import { readSetting } from './settingOptions.js';

/** The options of where the model is that are not run settings (those: MODEL_SETTINGS, in each
 * command's settingOptions). */
export const MODEL_OPTIONS = {
  ...strings('model', 'threads', 'gpu', 'endpoint', 'model-name', 'context-length'),
  ...flags('no-lookup'),
};

/** The run settings of the model (src/core/vocabulary/settings.ts), in the order of the help. */
export const MODEL_SETTINGS = ['engine', 'dtype', 'kvCache', 'allowDownload', 'temperature', 'topP', 'maxNewTokens'] as const;

export const MODEL_HELP = `Model (none: the built-in model-free generator):
  --model <dir>         local model directory, run in-process: a GGUF (model-q4_k_m.gguf, from
                        chorus-train export --gguf) and/or the transformers.js layout (config.json,
                        tokenizer, onnx/model_q4.onnx ...); or a .gguf file; or a model of the
                        cache by name, owner/name[:selector] (chorus model pull fetched it)
  --threads <n>         CPU threads for a local model (default: the physical cores)
  --gpu <g>             auto (default: llama.cpp offloads to a GPU when a build for it loads, else
                        the CPU, with a message) | cpu
  --no-lookup           local model: no prompt-lookup drafting (the output is the same either way)
  --endpoint <url>      OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, LM Studio),
                        e.g. http://127.0.0.1:8000/v1; API key from CHORUS_API_KEY or OPENAI_API_KEY
  --model-name <name>   served model name for --endpoint
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
  const allowDownload = readSetting(v, 'allowDownload');
  const modelDir = resolveModelRef(v.model, { allowDownload });
  const dtype = readSetting(v, 'dtype');
  const engine = readSetting(v, 'engine');
  const gpu = v.gpu ?? 'auto';
  if (gpu !== 'auto' && gpu !== 'cpu') throw new Error(`--gpu must be auto or cpu, got '${gpu}'`);
  const threads = v.threads ? numberOption('threads', v.threads, 0, 1, { integer: true }) : undefined;
  const kvCache = readSetting(v, 'kvCache');
  return {
    kind: 'local',
    modelDir,
    engine,
    dtype,
    allowDownload,
    contextLength: ctx,
    threads,
    gpu,
    lookup: !v['no-lookup'],
    kvCache,
  };
}

export function samplingFrom(v: ModelValues, seed?: number): SamplingParams {
  return {
    temperature: readSetting(v, 'temperature'),
    topP: readSetting(v, 'topP'),
    maxNewTokens: readSetting(v, 'maxNewTokens'),
    ...(seed !== undefined ? { seed } : {}),
  };
}
