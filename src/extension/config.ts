// Settings (contributes.configuration `chorus.*`) read into the worker's typed options. The API key
// lives in SecretStorage, never in settings.
import * as vscode from 'vscode';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { RUN_ROOT } from '../core/run/runFolder.js';
import type { GenerateSettings, ModelConfig } from './worker/protocol.js';
import { settingDef, settingProblem, type SettingName, type SettingValue } from '../core/vocabulary/settings.js';
import { workerEnvFrom } from './worker/settings.js';
import type { ProjectFile } from '../core/run/types.js';
import { formalBudget } from '../core/vocabulary/defaults.js';

export const SECRET_API_KEY = 'chorus.apiKey';
/** The Hugging Face token for gated or private repositories ("CHORUS: Set Hugging Face Token"):
 * kept in the secret store, sent to the worker with each hub request, never written elsewhere. */
export const SECRET_HUB_TOKEN = 'chorus.hubToken';

export type ModelSource = 'none' | 'local' | 'openai';

function cfg(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration('chorus');
}

/** A run setting as the editor has it (package.json declares it from the same definition,
 * src/core/vocabulary/settings.ts): a value outside its type, range or closed list (a hand-edited
 * settings.json) reads as the default, as VS Code itself would show it. */
export function setting<N extends SettingName>(name: N, c: vscode.WorkspaceConfiguration = cfg()): SettingValue<N> {
  const d = settingDef(name);
  if (!('editor' in d)) throw new Error(`${name} is not an editor setting`);
  const v = c.get<unknown>(d.editor.replace(/^chorus\./, ''));
  return (v === undefined || settingProblem(d, v) ? d.default : v) as SettingValue<N>;
}

export function modelSource(): ModelSource {
  return setting('modelSource');
}

/** The configured model (the same ModelConfig as the CLI's --model/--endpoint), or null for the
 * built-in model-free generator. */
export async function modelConfig(secrets: vscode.SecretStorage): Promise<ModelConfig | null> {
  const c = cfg();
  const source = modelSource();
  if (source === 'openai') {
    const baseUrl = setting('endpoint', c).trim();
    const model = setting('modelName', c).trim();
    if (!baseUrl || !model)
      throw new Error(
        'chorus.model.source is "openai" but chorus.model.endpoint or chorus.model.name is empty: run "CHORUS: Select Model"',
      );
    const apiKey = (await secrets.get(SECRET_API_KEY)) || undefined;
    return { kind: 'openai', baseUrl, model, apiKey, timeoutMs: setting('requestTimeout', c) * 1000 };
  }
  if (source === 'local') {
    const modelDir = setting('modelPath', c).trim();
    if (!modelDir) throw new Error('chorus.model.source is "local" but chorus.model.localPath is empty: run "CHORUS: Select Model"');
    return {
      kind: 'local',
      modelDir,
      dtype: setting('dtype', c),
      allowDownload: setting('allowDownload', c),
      engine: setting('engine', c),
      // part of the held model's identity (worker/process/heldModel.ts): a change loads the model again
      kvCache: setting('kvCache', c),
    };
  }
  return null;
}

/** The run settings; a design's project file (chorus.json) `score` wins over the setting, as it
 * does over the CLI's default. */
export function generateSettings(project?: Pick<ProjectFile, 'score'>): GenerateSettings {
  const c = cfg();
  return {
    // Refinement rounds after the first generation, as in `chorus generate --rounds` (attempts: rounds + 1).
    rounds: setting('rounds', c),
    samples: setting('samples', c),
    coverageTarget: setting('coverageTarget', c),
    instance: setting('instance', c) || settingDef('instance').default,
    history: setting('history', c),
    seed: setting('seed', c),
    temperature: setting('temperature', c),
    topP: setting('topP', c),
    maxNewTokens: setting('maxNewTokens', c),
    simulator: setting('simulator', c),
    warmStart: setting('warmStart', c),
    score: project?.score ?? setting('score', c),
    formal: formalBudget(setting('formalBudget', c), setting('formalPointBudget', c)),
    limits: { timeoutS: setting('timeout', c), buildTimeoutS: setting('buildTimeout', c) },
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
  const d = setting('downloadFolder').trim();
  return d ? d.replace(/^~(?=$|[\\/])/, homedir()) : undefined;
}

export function outputDirectory(): string {
  return setting('outputDirectory').trim();
}

/** The root of the editor's run folders (chorus.output.runFolder): as the CLI, `chorus-out` beside
 * the design unless set; a relative setting is read against the design's workspace folder. */
export function runFolderRoot(designDir: string, workspaceDir: string | undefined): string {
  const set = setting('runFolder').trim();
  if (!set) return join(designDir, RUN_ROOT);
  return isAbsolute(set) ? set : resolve(workspaceDir ?? designDir, set);
}
