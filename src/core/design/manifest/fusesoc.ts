// FuseSoC cores (`.core`, CAPI=2), read by FuseSoC itself: `fusesoc run --setup` for the chosen
// core and target, with the Verilator tool, into a scratch work root (`--no-export`: the files are
// referenced where they are, nothing is copied and nothing is written beside the core). Edalize's
// Verilator setup writes a command file (`<core>.vc`) holding exactly what Verilator would get:
// source files in FuseSoC's dependency order, +incdir+, -D defines, -G parameters and the top.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { runBounded } from '../../util/proc.js';
import { DesignError } from '../errors.js';
import { tokens } from '../filelist.js';
import { repositoryRoot } from '../discover.js';
import { findTool, type ManifestDesign, type ManifestRef, type ManifestRunOptions } from './tool.js';

/** The core's VLNV as its file declares it (`name: vendor:lib:name:version`). */
export function coreName(text: string): string | null {
  return /^name\s*:\s*["']?([^\s"'#]+)/m.exec(text)?.[1] ?? null;
}

/** Rejects what FuseSoC 2 cannot read, before running it, with the way forward. */
export function checkCapi(text: string, path: string): void {
  const first =
    text
      .split(/\r?\n/)
      .find((l) => l.trim() && !l.trim().startsWith('#'))
      ?.trim() ?? '';
  if (/^CAPI=2:?$/.test(first)) return;
  const version = /^CAPI=(\S+?):?$/.exec(first)?.[1] ?? (first.startsWith('[') ? '1 (INI sections)' : 'none');
  throw new DesignError(
    'manifest',
    `${path}: unsupported FuseSoC core format (CAPI version ${version}); FuseSoC 2 reads CAPI=2 cores, whose first line is \`CAPI=2:\`. ` +
      `Convert the core to CAPI=2 (see the FuseSoC documentation), or pass the design files (or a -f file list) instead.`,
  );
}

/** Edalize's Verilator command file -> design. Paths are relative to the work root. */
export function parseVerilatorCommandFile(text: string, workRoot: string): Omit<ManifestDesign, 'kind' | 'manifest'> {
  const out: Omit<ManifestDesign, 'kind' | 'manifest'> = { files: [], includeDirs: [], defines: {}, params: {}, notes: [] };
  const ignored: string[] = [];
  const vhdl: string[] = [];
  const t = tokens(text);
  const abs = (p: string): string => resolve(workRoot, p);
  const define = (d: string): void => {
    const eq = d.indexOf('=');
    if (eq < 0) out.defines[d] = null;
    else out.defines[d.slice(0, eq)] = d.slice(eq + 1);
  };
  for (let i = 0; i < t.length; i++) {
    const x = t[i];
    if (['--Mdir', '-Mdir', '-CFLAGS', '-LDFLAGS', '--prefix', '-o', '--exe-name'].includes(x)) i++;
    else if (x === '--top-module' || x === '--top') out.top = t[++i];
    else if (x.startsWith('+incdir+')) for (const d of x.slice(8).split('+').filter(Boolean)) out.includeDirs.push(abs(d));
    else if (x.startsWith('+define+')) for (const d of x.slice(8).split('+').filter(Boolean)) define(d);
    else if (x.startsWith('-D')) define(x.length > 2 ? x.slice(2) : t[++i]);
    else if (x.startsWith('-I')) out.includeDirs.push(abs(x.length > 2 ? x.slice(2) : t[++i]));
    else if (x.startsWith('-G')) {
      const p = x.length > 2 ? x.slice(2) : t[++i];
      const eq = p.indexOf('=');
      if (eq > 0) out.params[p.slice(0, eq)] = p.slice(eq + 1);
    } else if (x === '-v') out.files.push(abs(t[++i]));
    else if (x.startsWith('-') || x.startsWith('+')) {
      if (!['--cc', '--exe', '--binary', '--sc', '--lint-only', '--main', '--timing', '--build'].includes(x)) ignored.push(x);
    } else if (/\.(sv|v|svh|vh)$/i.test(x)) out.files.push(abs(x));
    else if (/\.vhdl?$/i.test(x)) vhdl.push(x);
    else ignored.push(x);
  }
  const other = ignored.filter((x) => !/\.(c|cc|cpp|cxx|h|hpp)$/i.test(x));
  if (other.length) out.notes.push(`FuseSoC's Verilator options not used by CHORUS: ${other.join(' ')}`);
  if (ignored.length > other.length)
    out.notes.push(
      `C/C++ files of the core ignored (CHORUS builds its own harness): ${ignored.filter((x) => !other.includes(x)).join(' ')}`,
    );
  if (vhdl.length) out.notes.push(`VHDL files ignored (Verilator reads Verilog/SystemVerilog only): ${vhdl.join(' ')}`);
  return out;
}

const PLACEHOLDER_TOP = 'chorus_top_not_chosen';

export interface FusesocRef extends ManifestRef {
  /** Folders FuseSoC searches for cores (default: the core's repository root). */
  coresRoots?: string[];
}

export async function readFusesoc(manifest: string, ref: FusesocRef, o: ManifestRunOptions = {}): Promise<ManifestDesign> {
  const text = readFileSync(manifest, 'utf8');
  checkCapi(text, manifest);
  const core = ref.core ?? coreName(text);
  if (!core)
    throw new DesignError(
      'manifest',
      `${manifest} declares no core name (a \`name: vendor:library:name:version\` line); name the core with --core (chorus.json: "core")`,
    );
  const target = ref.target ?? 'default';
  const tool = findTool('fusesoc', manifest);
  const roots = ref.coresRoots?.length ? ref.coresRoots.map((r) => resolve(r)) : [repositoryRoot(dirname(manifest))];
  const scratch = mkdtempSync(join(tmpdir(), 'chorus-fusesoc-'));
  try {
    const setup = async (name: string, extraRoots: string[], work: string) => {
      const args = [
        ...[...roots, ...extraRoots].flatMap((r) => ['--cores-root', r]),
        'run',
        '--setup',
        '--no-export',
        '--work-root',
        work,
        '--target',
        target,
        '--tool',
        'verilator',
        name,
      ];
      const tried = `fusesoc ${args.map((a) => (a === work ? '<scratch>' : a.startsWith(scratch) ? '<scratch wrapper>' : a)).join(' ')}`;
      // cwd: the scratch folder, so no fusesoc.conf or build/ appears in the user's folder.
      const r = await runBounded(tool, args, {
        cwd: scratch,
        timeoutS: o.timeoutS ?? 300,
        signal: o.signal,
        env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
      });
      if (r.cancelled) throw new DesignError('tool', 'cancelled');
      if (r.timedOut) throw new DesignError('tool', `${tried} did not finish in time; run it yourself to see where it waits`);
      const vc = existsSync(work) ? readdirSync(work).find((f) => f.endsWith('.vc')) : undefined;
      return { r, tried, vc };
    };
    let work = join(scratch, 'work');
    let { r, tried, vc } = await setup(core, [], work);
    const notes: string[] = [];
    let wrapped = false;
    if (r.exitCode !== 0 && /has no toplevel/i.test(r.all)) {
      // A library core (common_cells, prim): its target names no toplevel, which FuseSoC's setup
      // needs. Ask again through a wrapper core in the scratch folder that depends on it and names
      // the top the user chose (or none: the simulator's front end then lists the candidates).
      const wrapDir = join(scratch, 'wrapper');
      mkdirSync(wrapDir);
      writeFileSync(
        join(wrapDir, 'chorus_wrapper.core'),
        `CAPI=2:\nname: chorus:scratch:wrapper:0\nfilesets:\n  deps:\n    depend: [${JSON.stringify(core)}]\ntargets:\n  ${target}:\n    filesets: [deps]\n    toplevel: ${ref.top ?? PLACEHOLDER_TOP}\n`,
      );
      work = join(scratch, 'work-wrapped');
      ({ r, tried, vc } = await setup('chorus:scratch:wrapper:0', [wrapDir], work));
      wrapped = true;
      notes.push(
        `core ${core}, target ${target} names no toplevel: read as a library (through a scratch core that depends on it)${ref.top ? `, top ${ref.top}` : ''}; its target's parameters are not applied`,
      );
    }
    if (r.exitCode !== 0 || !vc) {
      const tail = r.all.trim().split('\n').slice(-12).join('\n');
      const hint = /no target|has no target|target '?[\w-]+'? (?:not|does not)/i.test(r.all)
        ? `check the target (--manifest-target; chorus.json "target"): \`fusesoc --cores-root ${roots[0]} core-info ${core}\` lists the core's targets`
        : /could not find|not found|no such core/i.test(r.all)
          ? `check the core name (--core; chorus.json "core") and that its dependencies are under ${roots.join(', ')} (\`fusesoc --cores-root ${roots[0]} core list\`)`
          : 'fix the core as FuseSoC reports, or pass the design files (or a -f file list) instead';
      throw new DesignError(
        'manifest',
        `FuseSoC could not set up core ${core}, target ${target} (tried: ${tried}):\n${tail}\nNext: ${hint}`,
      );
    }
    const d = parseVerilatorCommandFile(readFileSync(join(work, vc), 'utf8'), work);
    if (wrapped && d.top === PLACEHOLDER_TOP) delete d.top;
    d.notes.unshift(...notes);
    if (d.files.length === 0)
      throw new DesignError(
        'manifest',
        `FuseSoC gave no Verilog/SystemVerilog files for core ${core}, target ${target} (tried: ${tried}); check the target's filesets`,
      );
    d.notes.unshift(
      `FuseSoC core ${core}, target ${target}: ${d.files.length} files, ${d.includeDirs.length} include folders, ${Object.keys(d.defines).length} defines, ${Object.keys(d.params).length} parameters${d.top ? `, top ${d.top}` : ''}`,
    );
    return { kind: 'fusesoc', manifest, ...d };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
