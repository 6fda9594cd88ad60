// Which design a command works on: the project file beside it (`chorus.json`, searched upward to
// the workspace folder), or one inferred from the folder and offered to be saved on first use.
import * as vscode from 'vscode';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { DesignOptions } from '../core/design/load.js';
import { findProjectFile, inferProject, projectToDesign, readProjectFile, writeProjectFile, PROJECT_FILE, type ProjectFile } from './project.js';

export interface ResolvedDesign {
  design: DesignOptions;
  project: ProjectFile;
  /** The project file, existing or proposed. */
  projectPath: string;
  existing: boolean;
  dir: string;
}

function workspaceRoot(uri: vscode.Uri): string | undefined {
  return vscode.workspace.getWorkspaceFolder(uri)?.uri.fsPath;
}

/** From a design file, a folder, or several selected files. */
export function resolveDesign(target: vscode.Uri, selected: vscode.Uri[] = []): ResolvedDesign {
  const isDir = existsSync(target.fsPath) && statSync(target.fsPath).isDirectory();
  const dir = isDir ? target.fsPath : dirname(target.fsPath);
  const found = findProjectFile(dir, workspaceRoot(target));
  if (found) {
    const project = readProjectFile(found);
    return { design: projectToDesign(project, dirname(found)), project, projectPath: found, existing: true, dir: dirname(found) };
  }
  let project: ProjectFile;
  if (selected.length > 1) project = { files: selected.map((u) => relative(dir, u.fsPath)) };
  else project = inferProject(dir, undefined, isDir ? undefined : target.fsPath);
  if (project.files.length === 0 && !project.fileLists?.length) throw new Error(`no design sources (.sv/.v) found in ${dir}`);
  return { design: projectToDesign(project, dir), project, projectPath: join(dir, PROJECT_FILE), existing: false, dir };
}

/** On first use, offers to save the inferred project (non-blocking). */
export function offerProjectFile(r: ResolvedDesign, top?: string): void {
  if (r.existing) return;
  const project = top ? { ...r.project, top } : r.project;
  void vscode.window
    .showInformationMessage(`CHORUS: save the design settings as ${relative(vscode.workspace.getWorkspaceFolder(vscode.Uri.file(r.dir))?.uri.fsPath ?? r.dir, r.projectPath) || PROJECT_FILE}? (files: ${project.files.join(', ') || project.fileLists?.join(', ')})`, 'Create chorus.json', 'Not now')
    .then(async (pick) => {
      if (pick !== 'Create chorus.json' || existsSync(r.projectPath)) return;
      writeProjectFile(r.projectPath, project);
      await vscode.window.showTextDocument(vscode.Uri.file(r.projectPath), { preview: true, viewColumn: vscode.ViewColumn.Beside });
    });
}
