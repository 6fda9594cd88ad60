// Which design a command works on: the project file beside it (`chorus.json`, searched upward to
// the workspace folder), or one inferred from the folder and offered to be saved on first use.
import * as vscode from 'vscode';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { DesignOptions } from '../core/run/design.js';
import { inferProject } from './project.js';
import {
  PROJECT_FILE,
  collectFolder,
  discover,
  findManifest,
  findProjectFile,
  projectToDesign,
  readProjectFile,
  withDiscovered,
  writeProjectFile,
  type ProjectFile,
} from '../core/run/sources.js';
import { worthAProjectFile } from './projectOffer.js';

export interface ResolvedDesign {
  design: DesignOptions;
  project: ProjectFile;
  /** The project file, existing or proposed. */
  projectPath: string;
  existing: boolean;
  dir: string;
  /** For an existing project: the project with what the repository search found added (include
   * folders, package/module files), offered to be recorded so that the search happens once. */
  withFound?: ProjectFile;
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
    const design = projectToDesign(project, dirname(found));
    let withFound: ProjectFile | undefined;
    if (!project.manifest && !project.fileLists?.length) {
      const files = design.files.filter((f) => existsSync(f) && statSync(f).isFile());
      const d = discover(files, design.includeDirs ?? [], { cwd: dirname(found) });
      if (d.includeDirs.length || d.files.length) withFound = withDiscovered(project, d, dirname(found));
    }
    return { design, project, projectPath: found, existing: true, dir: dirname(found), withFound };
  }
  let project: ProjectFile;
  if (selected.length > 1) project = { files: selected.map((u) => relative(dir, u.fsPath)) };
  else if (isDir && !findManifest(dir)) {
    // A folder: its sources, testbenches and verification folders left out (folder.ts).
    const f = collectFolder(dir);
    project = {
      files: f.files.map((x) => relative(dir, x)),
      ...(f.includeDirs.length ? { includeDirs: f.includeDirs.map((x) => relative(dir, x) || '.') } : {}),
    };
  } else project = inferProject(dir, undefined, isDir ? undefined : target.fsPath);
  if (project.files.length === 0 && !project.fileLists?.length && !project.manifest)
    throw new Error(`no design sources (.sv/.v) found in ${dir}: pick the design files, their folder, or a manifest (.core, Bender.yml)`);
  if (!project.manifest && !project.fileLists?.length) {
    // Includes, packages and modules the files need from elsewhere in the repository: prefilled,
    // so that the offered chorus.json records them and the search happens once.
    const d = projectToDesign(project, dir);
    project = withDiscovered(project, discover(d.files, d.includeDirs ?? [], { cwd: dir }), dir);
  }
  return { design: projectToDesign(project, dir), project, projectPath: join(dir, PROJECT_FILE), existing: false, dir };
}

/** On first use, offers to save the inferred project (non-blocking), when it holds more than the
 * design's own file (projectOffer.ts). */
export function offerProjectFile(r: ResolvedDesign, top?: string, topChosenAmongSeveral = false): void {
  if (r.existing) {
    const add = r.withFound;
    if (!add) return;
    const found = [
      ...(add.includeDirs ?? []).filter((d) => !r.project.includeDirs?.includes(d)),
      ...add.files.filter((f) => !r.project.files.includes(f)),
    ];
    void vscode.window
      .showInformationMessage(
        `CHORUS: the design needed ${found.join(', ')} (found in the repository). Add to ${relative(r.dir, r.projectPath)}?`,
        'Add to chorus.json',
        'Not now',
      )
      .then((pick) => {
        if (pick === 'Add to chorus.json')
          writeProjectFile(r.projectPath, { ...readProjectFile(r.projectPath), includeDirs: add.includeDirs, files: add.files });
      });
    return;
  }
  const project = top ? { ...r.project, top } : r.project;
  if (!worthAProjectFile(project, topChosenAmongSeveral)) return;
  void vscode.window
    .showInformationMessage(
      `CHORUS: save the design settings as ${relative(vscode.workspace.getWorkspaceFolder(vscode.Uri.file(r.dir))?.uri.fsPath ?? r.dir, r.projectPath) || PROJECT_FILE}? (${project.manifest ? `manifest: ${project.manifest}` : `files: ${project.files.join(', ') || project.fileLists?.join(', ')}`}${project.includeDirs?.length ? `; include folders: ${project.includeDirs.join(', ')}` : ''})`,
      'Create chorus.json',
      'Not now',
    )
    .then(async (pick) => {
      if (pick !== 'Create chorus.json' || existsSync(r.projectPath)) return;
      writeProjectFile(r.projectPath, project);
      await vscode.window.showTextDocument(vscode.Uri.file(r.projectPath), { preview: true, viewColumn: vscode.ViewColumn.Beside });
    });
}
