// Settings (contributes.configuration `chorus.*`) read into the worker's typed options. The API key
// lives in SecretStorage, never in settings.
import * as vscode from 'vscode';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { RUN_ROOT } from '../core/run/runFolder.js';
import type { GenerateSettings, ModelConfig } from './worker/protocol.js';
import {
  DEFAULT_GENERATE_SAMPLES,
  DEFAULT_INSTANCE,
  DEFAULT_LIMITS,
  DEFAULT_ROUNDS,
  DEFAULT_SAMPLING,
  DEFAULT_SEED,
  DEFAULT_TARGET,
} from '../core/vocabulary/defaults.js';
import { workerEnvFrom } from './worker/settings.js';
import type { ProjectFile } from '../core/run/types.js';

export const SECRET_API_KEY = 'chorus.apiKey';
/** The Hugging Face token for gated or private repositories ("CHORUS: Set Hugging Face Token"):
 * kept in the secret store, sent to the worker with each hub request, never written elsewhere. */
export const SECRET_HUB_TOKEN = 'chorus.hubToken';

export type ModelSource = 'none' | 'local' | 'openai';

function cfg(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration('chorus');
}

export function modelSource(): ModelSource {
  const s = cfg().get<string>('model.source', 'none');
  return s === 'local' || s === 'openai' ? s : 'none';
}

/** The configured model (the same ModelConfig as the CLI's --model/--endpoint), or null for the
 * built-in model-free generator. */
export async function modelConfig(secrets: vscode.SecretStorage): Promise<ModelConfig | null> {
  const c = cfg();
  const source = modelSource();
  if (source === 'openai') {
    const baseUrl = c.get<string>('model.endpoint', '').trim();
    const model = c.get<string>('model.name', '').trim();
    if (!baseUrl || !model)
      throw new Error(
        'chorus.model.source is "openai" but chorus.model.endpoint or chorus.model.name is empty: run "CHORUS: Select Model"',
      );
    const apiKey = (await secrets.get(SECRET_API_KEY)) || undefined;
    return { kind: 'openai', baseUrl, model, apiKey, timeoutMs: c.get<number>('model.requestTimeoutSeconds', 600) * 1000 };
  }
  if (source === 'local') {
    const modelDir = c.get<string>('model.localPath', '').trim();
    if (!modelDir) throw new Error('chorus.model.source is "local" but chorus.model.localPath is empty: run "CHORUS: Select Model"');
    return {
      kind: 'local',
      modelDir,
      dtype: oneOf(c.get<string>('model.dtype', 'q4'), ['fp32', 'q4', 'q4f16'] as const, 'q4'),
      allowDownload: c.get<boolean>('model.allowDownload', false),
      engine: oneOf(c.get<string>('model.engine', 'auto'), ['auto', 'llama', 'onnx'] as const, 'auto'),
      // part of the held model's identity (worker/process/heldModel.ts): a change loads the model again
      kvCache: oneOf(c.get<string>('model.kvCache', 'auto'), ['auto', 'f16', 'q8_0'] as const, 'auto'),
    };
  }
  return null;
}

function oneOf<T extends string>(v: string, choices: readonly T[], dflt: T): T {
  return (choices as readonly string[]).includes(v) ? (v as T) : dflt;
}

/** The run settings; a design's project file (chorus.json) `score` wins over the setting, as it
 * does over the CLI's default. */
export function generateSettings(project?: Pick<ProjectFile, 'score'>): GenerateSettings {
  const c = cfg();
  const scoring = c.get<string>('generation.scoring', 'paper') === 'legal' ? 'legal' : 'paper';
  const history = c.get<string>('generation.historyMode', 'markov') === 'full' ? 'full' : 'markov';
  return {
    // Refinement rounds after the first generation, as in `chorus generate --rounds` (attempts: rounds + 1).
    rounds: Math.max(0, Math.floor(c.get<number>('generation.rounds', DEFAULT_ROUNDS))),
    samples: Math.max(1, Math.floor(c.get<number>('generation.samples', DEFAULT_GENERATE_SAMPLES))),
    target: Math.min(100, Math.max(0, c.get<number>('generation.coverageTarget', DEFAULT_TARGET * 100))) / 100,
    instance: c.get<string>('generation.dutInstance', DEFAULT_INSTANCE) || DEFAULT_INSTANCE,
    history,
    seed: Math.floor(c.get<number>('generation.seed', DEFAULT_SEED)),
    temperature: c.get<number>('generation.temperature', DEFAULT_SAMPLING.temperature),
    topP: c.get<number>('generation.topP', DEFAULT_SAMPLING.topP),
    maxNewTokens: Math.max(1, Math.floor(c.get<number>('generation.maxNewTokens', DEFAULT_SAMPLING.maxNewTokens))),
    simulator: c.get<string>('simulator.backend', 'verilator') || 'verilator',
    warmStart: c.get<boolean>('generation.warmStart', false),
    score: project?.score ?? scoring,
    limits: {
      timeoutS: Math.max(1, c.get<number>('simulator.timeoutSeconds', DEFAULT_LIMITS.timeoutS)),
      buildTimeoutS: Math.max(1, c.get<number>('simulator.buildTimeoutSeconds', DEFAULT_LIMITS.buildTimeoutS)),
    },
  };
}

/** Environment for the worker: simulator executables from settings (read once, at its start: a
 * change restarts it, worker/settings.ts). */
export function workerEnv(): NodeJS.ProcessEnv {
  const c = cfg();
  return workerEnvFrom((setting) => c.get<string>(setting.replace(/^chorus\./, ''), ''));
}

/** Where "CHORUS: Download a Model..." puts models; undefined: the per-machine cache the worker
 * knows (CHORUS_MODELS_DIR, else ~/.cache/chorus/models). */
export function downloadFolder(): string | undefined {
  const d = cfg().get<string>('model.downloadFolder', '').trim();
  return d ? d.replace(/^~(?=$|[\\/])/, homedir()) : undefined;
}

export function outputDirectory(): string {
  return cfg().get<string>('output.directory', '').trim();
}

/** The root of the editor's run folders (chorus.output.runFolder): as the CLI, `chorus-out` beside
 * the design unless set; a relative setting is read against the design's workspace folder. */
export function runFolderRoot(designDir: string, workspaceDir: string | undefined): string {
  const set = cfg().get<string>('output.runFolder', '').trim();
  if (!set) return join(designDir, RUN_ROOT);
  return isAbsolute(set) ? set : resolve(workspaceDir ?? designDir, set);
}
