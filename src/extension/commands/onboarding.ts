// First steps: the "Get started with CHORUS" walkthrough (shown once, on the first activation
// after install) and "Open an Example", which copies the bundled example designs into the
// workspace so a first run needs no design of one's own.
import * as vscode from 'vscode';
import { cpSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setting } from '../config.js';

export const WALKTHROUGH_ID = 'chorus-tb.chorus-testbench#chorus.gettingStarted';
const SHOWN_KEY = 'chorus.walkthroughShown';

/**
 * Opens the walkthrough on the first activation where chorus.showWalkthroughOnFirstRun allows it.
 * It counts as shown only once it opened: an activation during startup comes before the workbench
 * restores its editors and opens its own start page, which could hide a walkthrough opened at
 * once, so it opens when startup has settled, and a failed open is tried on the next activation.
 */
export async function maybeShowWalkthrough(ctx: vscode.ExtensionContext, settleMs = 1500): Promise<void> {
  if (ctx.globalState.get<boolean>(SHOWN_KEY)) return;
  if (!setting('showWalkthroughOnFirstRun')) return;
  await new Promise((r) => setTimeout(r, settleMs));
  try {
    await vscode.commands.executeCommand('workbench.action.openWalkthrough', WALKTHROUGH_ID, false);
    await ctx.globalState.update(SHOWN_KEY, true);
  } catch {
    // not marked: the next activation tries again
  }
}

/** Copies the bundled examples into `<workspace>/chorus-examples` (files already there are kept)
 * and opens the FSM design. Without a workspace folder it asks where to put them. */
export async function openExample(ctx: vscode.ExtensionContext): Promise<void> {
  const src = join(ctx.extensionUri.fsPath, 'examples');
  if (!existsSync(src)) {
    void vscode.window.showErrorMessage(`CHORUS: the bundled examples are missing from ${src}; reinstall the extension`);
    return;
  }
  let root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  if (!root) {
    const pick = await vscode.window.showOpenDialog({ canSelectFiles: false, canSelectFolders: true, openLabel: 'Put the examples here' });
    if (!pick?.[0]) return;
    root = pick[0].fsPath;
  }
  const dest = join(root, 'chorus-examples');
  // force: false keeps whatever the user already has under that name.
  cpSync(src, dest, { recursive: true, force: false, errorOnExist: false });
  const designs = readdirSync(dest).join(', ');
  await vscode.window.showTextDocument(vscode.Uri.file(join(dest, 'fsm', 'seq_detector.sv')));
  void vscode.window.showInformationMessage(
    `CHORUS: examples in ${dest} (${designs}). Run "CHORUS: Generate Testbench" on the open design.`,
  );
}
