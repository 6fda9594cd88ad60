// CHORUS: Edit Project File. Opens the design's chorus.json, writing the inferred one first when
// the design has none yet.
import * as vscode from 'vscode';
import { resolveDesign } from '../designResolver.js';
import { writeProjectFile } from '../../core/run/sources.js';
import type { Session } from './session.js';

export async function editProject(s: Session, uri?: vscode.Uri): Promise<void> {
  const target = s.targetUri(uri);
  if (!target) return;
  const r = resolveDesign(target);
  if (!r.existing) writeProjectFile(r.projectPath, r.project);
  s.lastProjectPath = r.projectPath;
  await vscode.window.showTextDocument(vscode.Uri.file(r.projectPath));
}
