// What the manifest readers share: the reference a user gives, the design a tool answers with, and
// finding the tool (or saying which one to install).
import { accessSync, constants, statSync } from 'node:fs';
import { basename, delimiter, join } from 'node:path';
import { DesignError } from '../errors.js';

export type ManifestKind = 'fusesoc' | 'bender';

export interface ManifestRef {
  /** The `.core` file, the `Bender.yml`, or a folder holding exactly one of them. */
  path: string;
  /** FuseSoC: the core's VLNV (default: the one the `.core` file declares). */
  core?: string;
  /** FuseSoC: the target (default `default`); Bender: extra targets, comma-separated. */
  target?: string;
  /** The top the user chose: FuseSoC needs one for a library core whose target names none. */
  top?: string;
}

export interface ManifestDesign {
  kind: ManifestKind;
  /** The manifest file read. */
  manifest: string;
  files: string[];
  includeDirs: string[];
  defines: Record<string, string | null>;
  params: Record<string, string>;
  top?: string;
  notes: string[];
}

export interface ManifestRunOptions {
  signal?: AbortSignal;
  timeoutS?: number;
}

export const TOOLS: Record<ManifestKind, { exe: string; env: string; install: string; what: string }> = {
  fusesoc: { exe: 'fusesoc', env: 'CHORUS_FUSESOC', install: 'pip install fusesoc', what: 'a FuseSoC core file' },
  bender: { exe: 'bender', env: 'CHORUS_BENDER', install: 'cargo install bender', what: 'a Bender manifest' },
};

export function manifestKind(path: string): ManifestKind | null {
  const b = basename(path);
  if (/\.core$/i.test(b)) return 'fusesoc';
  if (b === 'Bender.yml') return 'bender';
  return null;
}

/** The tool's executable: $CHORUS_<TOOL>, else on PATH; a DesignError naming what to install. */
export function findTool(kind: ManifestKind, manifest: string): string {
  const t = TOOLS[kind];
  const fromEnv = process.env[t.env];
  if (fromEnv) {
    if (isExecutable(fromEnv)) return fromEnv;
    throw new DesignError(
      'tool-missing',
      `${t.env}=${fromEnv} is not an executable file; point it at the ${t.exe} executable, or unset it to use ${t.exe} from PATH`,
    );
  }
  for (const d of (process.env.PATH ?? '').split(delimiter)) {
    if (!d) continue;
    const p = join(d, t.exe);
    if (isExecutable(p)) return p;
  }
  throw new DesignError(
    'tool-missing',
    `${manifest} is ${t.what}; reading it needs ${t.exe}, which was not found (looked at $${t.env}, then ${t.exe} on PATH). ` +
      `Install it (\`${t.install}\`, or scripts/install-manifest-tools.sh in a CHORUS checkout) or set ${t.env}; or pass the design files (or a -f file list) instead.`,
  );
}

function isExecutable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
}
