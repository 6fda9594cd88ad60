// Testbench texts that are no file (a proposed revision, a past round) as read-only documents of
// the chorus-rev: scheme, for editors and diff editors; a proposed revision is reviewed in a diff
// against the file, with Accept / Reject.
import * as vscode from 'vscode';
import { basename } from 'node:path';

export const REVISION_SCHEME = 'chorus-rev';
/** Proposed testbench revisions kept for diff editors; older ones are dropped. */
const MAX_REVISIONS = 16;

export class Revisions implements vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly events = new vscode.EventEmitter<vscode.Uri>();
  private readonly subs: vscode.Disposable[];

  constructor() {
    this.subs = [
      vscode.workspace.registerTextDocumentContentProvider(REVISION_SCHEME, {
        onDidChange: this.events.event,
        provideTextDocumentContent: (uri) => this.texts.get(uri.toString()) ?? '',
      }),
      vscode.workspace.onDidCloseTextDocument((d) => {
        if (d.uri.scheme === REVISION_SCHEME) this.texts.delete(d.uri.toString());
      }),
    ];
  }

  /** A document of the text, named `name`. */
  uri(name: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: REVISION_SCHEME, path: `/${Date.now().toString(36)}/${name}` });
    this.texts.set(uri.toString(), text);
    // A long session refines many times: keep the newest revisions only (a Map iterates oldest
    // first), besides dropping each one when its diff editor closes.
    for (const k of this.texts.keys()) {
      if (this.texts.size <= MAX_REVISIONS) break;
      this.texts.delete(k);
    }
    this.events.fire(uri);
    return uri;
  }

  /** Shows the revision as a diff against the file; Accept replaces the file's text. */
  async review(tb: vscode.Uri, text: string, label: string): Promise<boolean> {
    // A file ends with a newline, as a generated testbench does (else the diff shows a last line
    // that is not really different, and Accept leaves the file without one).
    const body = text.endsWith('\n') ? text : `${text}\n`;
    const rev = this.uri(basename(tb.fsPath), body);
    await vscode.commands.executeCommand('vscode.diff', tb, rev, `${basename(tb.fsPath)} ↔ CHORUS ${label}`);
    const pick = await vscode.window.showInformationMessage(`CHORUS: accept the ${label} of ${basename(tb.fsPath)}?`, 'Accept', 'Reject');
    // The answer ends the review: the diff closes (after Accept the file shows the revision).
    const diffs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === rev.toString());
    await vscode.window.tabGroups.close(diffs).then(undefined, () => undefined);
    if (pick !== 'Accept') return false;
    const doc = await vscode.workspace.openTextDocument(tb);
    const edit = new vscode.WorkspaceEdit();
    edit.replace(tb, new vscode.Range(0, 0, doc.lineCount, 0), body);
    await vscode.workspace.applyEdit(edit);
    await doc.save();
    return true;
  }

  dispose(): void {
    this.events.dispose();
    this.subs.forEach((s) => s.dispose());
  }
}
