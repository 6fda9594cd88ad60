// CHORUS: Select Model. Where testbenches come from: the built-in model-free generator, a local
// model folder (llama.cpp GGUF or ONNX export) or an OpenAI-compatible endpoint. Each choice is
// checked by the worker before it is saved to the settings; an API key goes to the secret store.
// The models "CHORUS: Download a Model..." fetched into the cache are listed too (their hashes were
// checked when fetched: chosen as they are), and the download itself is one of the choices.
import * as vscode from 'vscode';
import { existsSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { formatBytes, kindLabel, safeText } from '../../core/run/frontEnd.js';
import { downloadFolder, SECRET_API_KEY, setting } from '../config.js';
import { settingDef } from '../../core/vocabulary/settings.js';
import type { ModelConfig, PulledModel } from '../worker/protocol.js';
import { recordEditorModel, useCachedModel } from './downloadModel.js';
import type { Session } from './session.js';

/** The models "CHORUS: Download a Model..." put in the cache (none when the worker cannot say). */
async function cachedModels(s: Session): Promise<PulledModel[]> {
  try {
    // The worker may be starting: the choices do not wait long for the list.
    const list = s.worker.request('listModels', downloadFolder() ? { modelsDir: downloadFolder() } : {});
    const late = new Promise<PulledModel[]>((r) => setTimeout(() => r([]), 5000).unref?.());
    return await Promise.race([list, late]);
  } catch (e) {
    s.output.appendLine(`[CHORUS] could not list the model cache: ${safeText((e as Error).message)}`);
    return [];
  }
}

export async function selectModel(s: Session): Promise<void> {
  const cached = (await cachedModels(s)).filter((m) => m.engine !== 'none');
  const current = setting('modelPath');
  const pick = await vscode.window.showQuickPick(
    [
      { label: '$(circuit-board) Model-free generator', description: 'built in, no model needed', id: 'none' as const },
      ...cached.map((m) => ({
        label: `$(package) ${m.repo}`,
        description: `${m.selector} (${kindLabel(m.kind)}, ${formatBytes(m.size)})${m.dir === current ? ' · in use' : ''}`,
        detail: m.dir,
        id: 'cached' as const,
        model: m,
      })),
      {
        label: '$(cloud-download) Download a model from Hugging Face…',
        description: 'a GGUF or an ONNX export, into the model cache',
        id: 'download' as const,
      },
      {
        label: '$(folder) Local model directory…',
        description: 'ONNX export (config.json, tokenizer, onnx/model*.onnx)',
        id: 'local' as const,
      },
      {
        label: '$(globe) OpenAI-compatible endpoint…',
        description: 'vLLM, SGLang, llama.cpp server, Ollama, LM Studio',
        id: 'openai' as const,
      },
    ],
    { title: 'CHORUS: where should testbenches come from?' },
  );
  if (!pick) return;
  if (pick.id === 'download') {
    await vscode.commands.executeCommand('chorus.downloadModel');
    return;
  }
  if (pick.id === 'cached' && 'model' in pick) {
    await useCachedModel(s, pick.model);
    return;
  }
  const c = vscode.workspace.getConfiguration('chorus');
  const target = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  if (pick.id === 'none') {
    await c.update('model.source', 'none', target);
    await recordEditorModel(s, null);
    void vscode.window.showInformationMessage('CHORUS: using the built-in model-free generator');
    s.setStatus('idle');
  } else if (pick.id === 'local') await useLocalFolder(s, c, target);
  else await useEndpoint(s, c, target);
}

type Target = vscode.ConfigurationTarget;

/** A local model folder: its engine and precision picked, the model loaded by the worker to check
 * it, then saved. */
async function useLocalFolder(s: Session, c: vscode.WorkspaceConfiguration, target: Target): Promise<void> {
  const dir = await vscode.window.showOpenDialog({
    title: 'CHORUS: local model folder (a GGUF, or an ONNX export)',
    canSelectFolders: true,
    canSelectFiles: false,
    openLabel: 'Use this model',
  });
  if (!dir?.[0]) return;
  // (the worker's llama.ts decides for real; the extension host does not load node-llama-cpp)
  const hasGguf = readdirSync(dir[0].fsPath).some((f) => f.endsWith('.gguf'));
  const hasOnnx = existsSync(join(dir[0].fsPath, 'onnx'));
  const engines = [
    {
      label: 'llama.cpp',
      description: hasGguf
        ? "the folder's GGUF, in-process (node-llama-cpp); a GPU when a build for it loads"
        : 'needs a .gguf in the folder (chorus-train export --gguf q4_k_m)',
      id: 'llama',
    },
    {
      label: 'ONNX',
      description: hasOnnx
        ? 'onnx/model_*.onnx, in-process on the CPU (onnxruntime)'
        : 'needs onnx/model_q4.onnx in the folder (chorus-train export)',
      id: 'onnx',
    },
  ].sort((a, b) => Number(b.id === 'llama' ? hasGguf : hasOnnx) - Number(a.id === 'llama' ? hasGguf : hasOnnx));
  const engine = await vscode.window.showQuickPick(engines, { title: 'CHORUS: inference engine (both run in the editor, offline)' });
  if (!engine) return;
  const dtype =
    engine.id === 'onnx'
      ? await vscode.window.showQuickPick([...settingDef('dtype').choices], { title: 'CHORUS: model precision (dtype)' })
      : setting('dtype', c);
  if (!dtype) return;
  const model: ModelConfig = {
    kind: 'local',
    modelDir: dir[0].fsPath,
    dtype: dtype as 'fp32' | 'q4' | 'q4f16',
    allowDownload: false,
    engine: engine.id as 'llama' | 'onnx',
  };
  const check = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'CHORUS: loading the model to check it' },
    () => s.worker.request('checkModel', { model }),
  );
  if (!check.ok) {
    // (the reason names the folder: a toast shows its first line, so the reason comes first)
    void vscode.window.showErrorMessage(`CHORUS: no model loads from ${basename(dir[0].fsPath)}: ${safeText(check.message)}`);
    return;
  }
  await c.update('model.localPath', dir[0].fsPath, target);
  await c.update('model.engine', engine.id, target);
  await c.update('model.dtype', dtype, target);
  s.status.modelInUse = null;
  await c.update('model.source', 'local', target);
  await recordEditorModel(s, dir[0].fsPath);
  void vscode.window.showInformationMessage(`CHORUS: ${safeText(check.message)}`);
  s.setStatus('idle');
}

/** An OpenAI-compatible server: its URL and key, probed by the worker, and the served model. */
async function useEndpoint(s: Session, c: vscode.WorkspaceConfiguration, target: Target): Promise<void> {
  const baseUrl = await vscode.window.showInputBox({
    title: 'CHORUS: OpenAI-compatible endpoint (base URL)',
    value: setting('endpoint', c) || 'http://127.0.0.1:8000/v1',
    validateInput: (v) => (/^https?:\/\/[^\s/]+/.test(v.trim()) ? null : 'a URL like http://127.0.0.1:8000/v1'),
    ignoreFocusOut: true,
  });
  if (!baseUrl) return;
  const key = await vscode.window.showInputBox({
    title: 'CHORUS: API key (stored in the secret store; leave empty for none)',
    password: true,
    ignoreFocusOut: true,
    placeHolder: 'empty: keep the stored key / none',
  });
  if (key === undefined) return;
  if (key) await s.ctx.secrets.store(SECRET_API_KEY, key);
  const apiKey = key || (await s.ctx.secrets.get(SECRET_API_KEY)) || undefined;
  const probe = await s.worker.request('checkModel', { model: { kind: 'openai', baseUrl: baseUrl.trim(), model: '', apiKey } });
  if (!probe.ok) {
    void vscode.window.showErrorMessage(`CHORUS: ${safeText(probe.message)}`);
    return;
  }
  let name: string | undefined;
  if (probe.models?.length) name = await vscode.window.showQuickPick(probe.models, { title: 'CHORUS: served model' });
  else
    name = await vscode.window.showInputBox({
      title: 'CHORUS: served model name',
      value: setting('modelName', c),
      ignoreFocusOut: true,
    });
  if (!name) return;
  await c.update('model.endpoint', baseUrl.trim(), target);
  await c.update('model.name', name, target);
  await c.update('model.source', 'openai', target);
  await recordEditorModel(s, null);
  void vscode.window.showInformationMessage(`CHORUS: using ${name} at ${baseUrl.trim()}`);
  s.setStatus('idle');
}
