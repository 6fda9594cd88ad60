// Bender packages (`Bender.yml`), read by Bender itself: `bender -d <package> script flist-plus`
// prints the resolved sources of the package and its dependencies in order, with +incdir+ and
// +define+ lines: an EDA file list, read by the one file-list parser (filelist.ts).
// Bender resolves dependencies through Bender.lock and checks them out under .bender/; both are the
// user's to create (`bender update` / `bender checkout`), so a package without a lock file is an
// error naming that step rather than something we do behind the user's back. With the lock file in
// place (and git dependencies checked out), `bender --local script` writes nothing and fetches
// nothing.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runBounded } from '../../util/proc.js';
import { DesignError } from '../errors.js';
import { readFileList } from '../filelist.js';
import { emptyDesign } from '../types.js';
import { findTool, type ManifestDesign, type ManifestRef, type ManifestRunOptions } from './tool.js';

/** Names of the packages a Bender.lock takes from git (`source: {Git: url}`). */
export function gitDependencies(lock: string): string[] {
  const out: string[] = [];
  let name: string | null = null;
  for (const line of lock.split(/\r?\n/)) {
    const pkg = /^ {2}([A-Za-z0-9_.-]+):\s*$/.exec(line);
    if (pkg) name = pkg[1];
    else if (name && /^\s+Git:\s*\S/.test(line)) {
      out.push(name);
      name = null;
    }
  }
  return out;
}

export function benderTargets(target: string | undefined): string[] {
  return (target ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
}

export async function readBender(manifest: string, ref: ManifestRef, o: ManifestRunOptions = {}): Promise<ManifestDesign> {
  const pkgDir = dirname(manifest);
  const tool = findTool('bender', manifest);
  // Bender writes Bender.lock when there is none (even for a package without dependencies): that
  // is the user's step to take, in their repository, not ours.
  if (!existsSync(join(pkgDir, 'Bender.lock'))) {
    throw new DesignError(
      'manifest',
      `${manifest} has no Bender.lock beside it: Bender has not resolved the package yet. Run \`bender update\` in ${pkgDir} (it writes Bender.lock and checks any dependencies out under .bender/), then try again.`,
    );
  }
  // Git dependencies come from .bender/ (`bender checkout`); fetching them is the user's step too
  // (network, and files written into their repository), so --local below forbids it.
  const git = gitDependencies(readFileSync(join(pkgDir, 'Bender.lock'), 'utf8'));
  if (git.length && !existsSync(join(pkgDir, '.bender'))) {
    throw new DesignError(
      'manifest',
      `${manifest}: the dependencies ${git.join(', ')} come from git and are not checked out (no .bender/ in ${pkgDir}). Run \`bender checkout\` in ${pkgDir} (it fetches them into .bender/), then try again.`,
    );
  }
  const targets = benderTargets(ref.target);
  const args = ['--local', '-d', pkgDir, 'script', 'flist-plus', ...targets.flatMap((t) => ['-t', t])];
  const tried = `bender ${args.join(' ')}`;
  const scratch = mkdtempSync(join(tmpdir(), 'chorus-bender-'));
  try {
    const r = await runBounded(tool, args, { cwd: scratch, timeoutS: o.timeoutS ?? 300, signal: o.signal });
    if (r.cancelled) throw new DesignError('tool', 'cancelled');
    if (r.timedOut)
      throw new DesignError(
        'tool',
        `${tried} did not finish in time (is it fetching dependencies?); run it yourself to see where it waits`,
      );
    if (r.exitCode !== 0) {
      const tail = r.stderr.trim().split('\n').slice(-12).join('\n') || r.all.trim().slice(-2000);
      const hint = /checkout|not checked out|does not exist|lock/i.test(r.all)
        ? `run \`bender checkout\` (or \`bender update\`) in ${pkgDir}, then try again`
        : /unknown|unexpected|invalid|parse|missing field/i.test(r.all)
          ? `fix ${manifest} as Bender reports (an older Bender may not know a newer manifest's fields: \`bender --version\`; update with \`cargo install bender\`)`
          : 'fix the package as Bender reports, or pass the design files (or a -f file list) instead';
      throw new DesignError('manifest', `Bender could not list the sources of ${manifest} (tried: ${tried}):\n${tail}\nNext: ${hint}`);
    }
    const list = join(scratch, 'bender.f');
    writeFileSync(list, r.stdout);
    const d = emptyDesign();
    const warnings: string[] = [];
    readFileList(list, true, d, warnings, pkgDir);
    const notes = warnings.map((w) => w.replace(list, `${tried} output`));
    const vhdl = d.files.filter((f) => /\.vhdl?$/i.test(f));
    const files = [...d.files.filter((f) => !/\.vhdl?$/i.test(f)), ...d.libraryFiles];
    if (vhdl.length) notes.push(`VHDL files ignored (Verilator reads Verilog/SystemVerilog only): ${vhdl.join(' ')}`);
    if (files.length === 0)
      throw new DesignError(
        'manifest',
        `Bender listed no Verilog/SystemVerilog files for ${manifest} (tried: ${tried}); check its sources and targets (--manifest-target; chorus.json "target")`,
      );
    notes.unshift(
      `Bender package ${pkgDir}${targets.length ? ` (targets ${targets.join(', ')})` : ''}: ${files.length} files, ${d.includeDirs.length} include folders, ${Object.keys(d.defines).length} defines`,
    );
    return { kind: 'bender', manifest, files, includeDirs: [...new Set(d.includeDirs)], defines: d.defines, params: d.params, notes };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
