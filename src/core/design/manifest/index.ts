// Designs described by their package manager's manifest: FuseSoC `.core` files and Bender
// `Bender.yml`. We never read the manifest's file lists ourselves: the package manager's own tool
// resolves dependencies, targets and conditions, and we ask it for the result (files, include
// folders, defines, parameters), as the engineer's other tools do. Without the tool we name it.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { DesignError } from '../errors.js';
import { manifestKind, type ManifestDesign, type ManifestKind, type ManifestRef, type ManifestRunOptions } from './tool.js';
import { readFusesoc } from './fusesoc.js';
import { readBender } from './bender.js';

export {
  findTool,
  manifestKind,
  TOOLS,
  type ManifestDesign,
  type ManifestKind,
  type ManifestRef,
  type ManifestRunOptions,
} from './tool.js';

/** The manifest a path names: the file itself, or the one manifest in a folder (null if none). */
export function findManifest(path: string): string | null {
  const abs = resolve(path);
  if (manifestKind(abs) && existsSync(abs) && statSync(abs).isFile()) return abs;
  if (!existsSync(abs) || !statSync(abs).isDirectory()) return null;
  const bender = join(abs, 'Bender.yml');
  const cores = listCores(abs);
  // A Bender.yml and a .core side by side (a package that supports both tools): Bender.yml is
  // read, by a documented order (README), and prepare.ts says so; several .core files and no
  // Bender.yml cannot be ordered (which core is the package's?): name one.
  if (existsSync(bender)) return bender;
  if (cores.length > 1) {
    throw new DesignError(
      'manifest',
      `${abs} holds several FuseSoC cores (${cores.map((f) => basename(f)).join(', ')}): name the one to read: ${cores.join(' or ')}`,
      [],
      cores,
    );
  }
  return cores[0] ?? null;
}

/** The manifests in a folder that findManifest did not choose (the .core files beside a Bender.yml). */
export function otherManifests(dir: string): string[] {
  const chosen = findManifest(dir);
  const all = [...(existsSync(join(dir, 'Bender.yml')) ? [join(dir, 'Bender.yml')] : []), ...listCores(dir)];
  return all.filter((f) => f !== chosen);
}

function listCores(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((e) => /\.core$/i.test(e))
      .sort()
      .map((e) => join(dir, e));
  } catch {
    return [];
  }
}

/** Asks the manifest's own tool for the design. */
export async function readManifest(ref: ManifestRef, o: ManifestRunOptions = {}): Promise<ManifestDesign> {
  const manifest = findManifest(ref.path);
  if (!manifest)
    throw new DesignError(
      'manifest',
      `no manifest at ${resolve(ref.path)}: expected a FuseSoC .core file or a Bender.yml (or a folder holding one)`,
    );
  const kind = manifestKind(manifest) as ManifestKind;
  if (kind === 'fusesoc') return readFusesoc(manifest, ref, o);
  return readBender(manifest, ref, o);
}
