// OS-level confinement of everything an untrusted testbench drives: the preprocessor and Verilator
// front end (they read `include files) and the simulation executable (it reads and writes files at
// run time). bubblewrap builds a file system from nothing: the run directory read-write, the
// design directories read-only, and for the simulation only the shared libraries it links (no
// /etc, /home, /root, /tmp); an empty environment, its own PID namespace and no /proc (from
// /proc/self/mem or /proc/self/fd a program could patch its own code or reach the descriptors the
// harness reports on), a /dev of null, zero, full, random and urandom, no network, and an
// unprivileged uid where the kernel allows user namespaces. prlimit caps address space (every
// step, compile steps included) and file size; a watcher on the host caps what the simulation
// adds to its run directory in all. When bubblewrap is missing or cannot create namespaces (some
// containers), runs go unjailed (the limits still apply), the static check refuses every path it
// cannot judge, and the result says so.
import { existsSync, lstatSync, opendirSync, readdirSync, realpathSync, statSync, type Dir, type Stats } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { runBounded, type RunGuard, type RunResult } from '../util/proc.js';
import type { Diagnostic } from './result.js';

export interface JailInfo {
  kind: 'bubblewrap' | 'none';
  reason?: string;
  /** User namespaces work: jailed processes run as SANDBOX_UID with no capabilities. Without
   * them (root in a container that forbids user namespaces) they run with every capability dropped. */
  userns: boolean; /** bubblewrap sizes a tmpfs (--size, 0.5 and later): the compile steps' private /tmp is then
   * capped at SCRATCH_LIMIT_BYTES; without it that scratch is bounded only by the machine's memory. */
  tmpfsSize?: boolean;
}

/** The compile steps' private /tmp (memory-backed): its own cap, apart from the run directory's. */
export const SCRATCH_LIMIT_BYTES = 256 * 1024 * 1024;

/** nobody: owns nothing on the host. */
export const SANDBOX_UID = 65534;

/** Variables a toolchain step may see (none is a secret); everything else is left behind, so an
 * API key in the caller's environment never reaches a process a testbench drives. */
const TOOL_ENV = ['PATH', 'VERILATOR_ROOT', 'LANG', 'LC_ALL', 'LC_CTYPE'];

/** The caller's environment reduced to TOOL_ENV: for bwrap itself (a jail with a /proc could read
 * it at /proc/1/environ; none has one, but bwrap needs nothing more) and for every unjailed step. */
export function toolEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of TOOL_ENV) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  return { ...env, ...extra };
}

let probe: Promise<JailInfo> | undefined;

export function detectJail(): Promise<JailInfo> {
  if (process.env.CHORUS_NO_JAIL === '1') return Promise.resolve({ kind: 'none', reason: 'disabled by CHORUS_NO_JAIL=1', userns: false });
  probe ??= (async (): Promise<JailInfo> => {
    const base = ['--ro-bind', '/', '/', '--dev', '/dev', '--unshare-net', '--unshare-pid', '--die-with-parent'];
    const user = await runBounded(
      'bwrap',
      [...base, '--unshare-user', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID), 'true'],
      { timeoutS: 10, env: toolEnv() },
    );
    if (user.spawnError) return { kind: 'none', reason: 'bubblewrap (bwrap) is not installed: apt-get install bubblewrap', userns: false };
    const help = await runBounded('bwrap', ['--help'], { timeoutS: 10, env: toolEnv() });
    const tmpfsSize = /--size\b/.test(help.all);
    if (user.exitCode === 0) return { kind: 'bubblewrap', userns: true, tmpfsSize };
    const plain = await runBounded('bwrap', [...base, ...rootCapDrop(), 'true'], { timeoutS: 10, env: toolEnv() });
    if (plain.exitCode !== 0)
      return { kind: 'none', reason: `bubblewrap cannot create a sandbox here: ${plain.stderr.trim().split('\n')[0]}`, userns: false };
    return {
      kind: 'bubblewrap',
      userns: false,
      tmpfsSize,
      reason: `user namespaces are not available (${user.stderr.trim().split('\n')[0]}): jailed processes keep the caller's uid, with every capability dropped`,
    };
  })();
  return probe;
}

/** What one jailed step may see besides the toolchain or the shared libraries. */
export interface JailView {
  /** Read-write: the run directory. */
  writable: string[];
  /** Read-only directories and files (design directories, cached objects). */
  readOnly: string[];
  /** Paths inside readOnly hidden behind an empty directory or /dev/null (dot-files of a design directory). */
  hidden?: string[];
  cwd: string;
}

/** Root keeps its capabilities in bubblewrap unless told; any other caller has none to drop. */
function rootCapDrop(): string[] {
  return process.getuid?.() === 0 ? ['--cap-drop', 'ALL'] : [];
}

/** The device nodes a jail gets: what a program may open for nothing, zeros or randomness. No tty,
 * no pts, no shm, and none of bwrap's --dev links into /proc (/dev/fd, /dev/stdout...). */
const DEVICES = ['null', 'zero', 'full', 'random', 'urandom'];

/**
 * The namespace flags, the identity and the devices, shared by compile and run jails. No jail gets
 * a /proc: the simulation needs none, and neither do the compile steps (traced: g++, cc1plus, as
 * and ld open nothing there; the verilator wrapper's perl reads /proc/self/exe only to name
 * itself, and falls back to argv[0]).
 */
function isolation(jail: JailInfo): string[] {
  const id = jail.userns ? ['--unshare-user', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID)] : rootCapDrop();
  // /dev read-only: its devices still work, but nothing can be created in it.
  return [
    ...id,
    '--unshare-net',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--die-with-parent',
    '--new-session',
    '--tmpfs',
    '/dev',
    ...DEVICES.flatMap((d) => ['--dev-bind-try', `/dev/${d}`, `/dev/${d}`]),
    '--remount-ro',
    '/dev',
  ];
}

function mounts(view: JailView): string[] {
  const args: string[] = [];
  for (const p of view.readOnly) args.push('--ro-bind', p, p);
  for (const p of view.writable) args.push('--bind', p, p);
  for (const p of view.hidden ?? []) {
    let dir = false;
    try {
      dir = statSync(p).isDirectory();
    } catch {
      continue;
    }
    args.push(...(dir ? ['--tmpfs', p, '--remount-ro', p] : ['--ro-bind', '/dev/null', p]));
  }
  args.push('--chdir', view.cwd);
  return args;
}

// ---------------------------------------------------------------------------------------------
// The design directories a jail shows

/** Directories too broad to show whole: a design file sitting in one of them is shown alone. */
function tooBroad(dir: string): boolean {
  const home = resolve(homedir());
  if (dir === '/' || dir === home || home.startsWith(dir + sep)) return true;
  return [
    '/tmp',
    '/var/tmp',
    '/dev/shm',
    '/home',
    '/root',
    '/etc',
    '/var',
    '/run',
    '/proc',
    '/sys',
    '/usr',
    '/opt',
    '/mnt',
    '/media',
    '/srv',
  ].includes(dir);
}

function real(p: string): string | null {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
}

export interface DesignView {
  /** Directories and single files shown read-only. */
  paths: string[];
  /** Dot-entries at any depth of a shown directory (.git, .env, sub/.ssh): hidden. */
  hidden: string[];
  /** Directories every relative path may resolve into (realpaths): what the static check allows. */
  roots: string[];
  /** Said in the result record. */
  note: string;
}

/** Entries designView visits in the shown directories (all together) before it stops walking them
 * and shows only the design's own files instead: a huge repository must not stall a run. */
export const DESIGN_WALK_LIMIT = 20_000;
/** Dot-entries it hides at most: each is a mount in every jailed step (bubblewrap takes 0.07 s for
 * 250 of them, 0.9 s for 1000). */
export const DESIGN_HIDDEN_LIMIT = 256;

const HDL_FILE = /\.(svh|vh|sv|v|h|inc|pkg)$/i;

/** The HDL files at the top of `d`: regular files only, never a dot-file or a symbolic link (a
 * file shown alone is bound at its path with its target's contents). */
function hdlFilesOf(d: string): string[] {
  const out: string[] = [];
  try {
    for (const e of readdirSync(d, { withFileTypes: true }))
      if (!e.name.startsWith('.') && HDL_FILE.test(e.name) && e.isFile()) out.push(join(d, e.name));
  } catch {
    /* unreadable: show nothing of it */
  }
  return out;
}

/**
 * The dot-entries at every depth of `dirs`, without descending into them or following symbolic
 * links (a link leads, in the jail, to its target's own path: hidden there, shown, or absent), or
 * null when more than `limit` entries would have to be visited or more than `hiddenLimit` hidden.
 * `needed` (design files, include directories) is never hidden, nor are the directories on the way
 * to it (`keep`); inside a dot-directory kept only for that, everything else is hidden.
 */
function dotEntries(dirs: string[], needed: Set<string>, keep: Set<string>, limit: number, hiddenLimit: number): string[] | null {
  const hidden: string[] = [];
  // [directory, true when it is a dot-directory shown only on the way to something needed]
  const stack: Array<[string, boolean]> = dirs.map((d) => [d, false]);
  let visited = 0;
  while (stack.length) {
    const [d, passage] = stack.pop()!;
    let dir: Dir;
    try {
      dir = opendirSync(d);
    } catch {
      continue; // unreadable: nothing in it can be read in the jail either
    }
    try {
      for (let e = dir.readSync(); e; e = dir.readSync()) {
        if (++visited > limit) return null;
        const p = join(d, e.name);
        let isDir = e.isDirectory();
        let isLink = e.isSymbolicLink();
        if (!isDir && !isLink && !e.isFile()) {
          // The file system did not say (or a FIFO, a socket): ask.
          try {
            const st = lstatSync(p);
            isDir = st.isDirectory();
            isLink = st.isSymbolicLink();
          } catch {
            continue;
          }
        }
        if (isLink) continue;
        if (needed.has(p)) {
          if (isDir) stack.push([p, false]);
        } else if (keep.has(p)) {
          if (isDir) stack.push([p, passage || e.name.startsWith('.')]);
        } else if (passage || e.name.startsWith('.')) {
          hidden.push(p);
          if (hidden.length > hiddenLimit) return null;
        } else if (isDir) stack.push([p, false]);
      }
    } finally {
      dir.closeSync();
    }
  }
  return hidden;
}

/** `p` and every directory above it. */
function withAncestors(p: string, into: Set<string>): void {
  for (let d = p; !into.has(d); d = dirname(d)) {
    into.add(d);
    if (dirname(d) === d) break;
  }
}

/**
 * What the testbench may read of the design: every design file's directory and every include
 * directory, unless the directory is a home or system directory (then only the design files and
 * the HDL files at its top), minus the dot-entries at every depth. When the directories hold more
 * than `walkLimit` entries, only the design files and the HDL files at the top of their
 * directories and of the include directories are shown. Symlinked design files are shown at their
 * target.
 */
export function designView(
  files: string[],
  includeDirs: string[],
  walkLimit = DESIGN_WALK_LIMIT,
  hiddenLimit = DESIGN_HIDDEN_LIMIT,
): DesignView {
  const dirs = new Set<string>();
  const singles = new Set<string>();
  const narrowed: string[] = [];
  // Never hidden: what the design itself names, and the directories on the way to it.
  const needed = new Set<string>();
  const keep = new Set<string>();
  const designFiles: string[] = [];
  for (const f of files) {
    const abs = resolve(f);
    const d = dirname(abs);
    withAncestors(abs, keep);
    needed.add(abs);
    designFiles.push(abs);
    if (tooBroad(d)) {
      singles.add(abs);
      narrowed.push(d);
    } else dirs.add(d);
    const r = real(abs);
    if (r && r !== abs) {
      singles.add(r);
      withAncestors(r, keep);
      needed.add(r);
      designFiles.push(r);
    }
  }
  const incs: string[] = [];
  for (const inc of includeDirs) {
    const d = resolve(inc);
    if (!existsSync(d)) continue;
    withAncestors(d, keep);
    needed.add(d);
    incs.push(d);
    if (!tooBroad(d)) {
      dirs.add(d);
      continue;
    }
    narrowed.push(d);
    for (const h of hdlFilesOf(d)) singles.add(h);
  }
  // A directory inside another shown one is already visible.
  let dirList = [...dirs].filter((d) => ![...dirs].some((o) => o !== d && d.startsWith(o + sep)));
  let hidden = dotEntries(dirList, needed, keep, walkLimit, hiddenLimit);
  let note = `design directories shown read-only: ${dirList.length}`;
  if (hidden === null) {
    // Too big to walk: show what the design needs, file by file.
    note = `design directories shown read-only: 0; ${dirList.join(', ')} hold${dirList.length > 1 ? '' : 's'} more than ${walkLimit} entries (or more than ${hiddenLimit} dot-entries) to check for hidden files: only the design files and the HDL files at the top of their directories and of the include directories are shown`;
    for (const f of designFiles) singles.add(f);
    for (const d of new Set([...designFiles.map((f) => dirname(f)), ...incs]))
      if (dirList.some((s) => d === s || d.startsWith(s + sep))) for (const h of hdlFilesOf(d)) singles.add(h);
    dirList = [];
    hidden = [];
  }
  const paths = [...dirList, ...[...singles].filter((f) => !dirList.some((d) => f.startsWith(d + sep)))];
  // Single files count as roots too: a header shown alone may be included by its name.
  const roots = [...new Set(paths.map((d) => real(d) ?? d))];
  if (narrowed.length)
    note += `; ${[...new Set(narrowed)].join(', ')} too broad to show whole (home or system directory): only the design files and HDL headers in it`;
  return { paths, hidden, roots, note };
}

// ---------------------------------------------------------------------------------------------
// Compile steps: the toolchain, the run directory, the design

/** Where the host keeps what every toolchain step needs: /usr and its merged-usr aliases. */
function systemMounts(): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    let target: string | null = null;
    try {
      target = realpathSync(top);
    } catch {
      continue;
    }
    if (target.startsWith('/usr/')) args.push('--symlink', target.slice(1), top);
    else args.push('--ro-bind', top, top);
  }
  return args;
}

/**
 * `file args` as a toolchain step (verilator -E, the front end, the C++ compiler) inside a jail
 * that holds the toolchain (/usr plus `toolDirs`), `view` and a private /tmp. Without a jail: the
 * same command with the reduced environment. `limits.memoryLimitMb` caps the address space of the
 * step (RLIMIT_AS, inherited by every process it starts: cc1plus, as, ld).
 */
export function toolchainCommand(
  jail: JailInfo,
  file: string,
  args: string[],
  view: JailView & { toolDirs: string[] },
  limits: { memoryLimitMb?: number | null; stackUnlimited?: boolean; env?: Record<string, string> } = {},
): { file: string; args: string[]; env: Record<string, string> } {
  // prlimit outside, as for the simulation: the cap holds for bwrap and everything it starts.
  const cap = memoryCap(limits.memoryLimitMb, limits.stackUnlimited);
  const env = toolEnv(limits.env);
  if (jail.kind === 'none') return cap.length ? { file: cap[0], args: [...cap.slice(1), file, ...args], env } : { file, args, env };
  const setenv = Object.entries(env).flatMap(([k, v]) => ['--setenv', k, v]);
  const extra = view.toolDirs.filter((d) => d !== '/usr' && !d.startsWith('/usr/') && existsSync(d));
  const jailed = [
    ...isolation(jail),
    ...systemMounts(),
    // The private /tmp first: a toolchain or checkout that lives under /tmp (a CI clone, a
    // wheel in a project cache there) is then bound on top of it instead of hidden by it.
    ...(jail.tmpfsSize ? ['--size', String(SCRATCH_LIMIT_BYTES)] : []),
    '--tmpfs',
    '/tmp',
    ...extra.flatMap((d) => ['--ro-bind', d, d]),
    ...mounts(view),
    '--clearenv',
    ...setenv,
    '--',
    file,
    ...args,
  ];
  return cap.length ? { file: cap[0], args: [...cap.slice(1), 'bwrap', ...jailed], env } : { file: 'bwrap', args: jailed, env };
}

/** The directories a toolchain executable needs outside /usr: its bin directory and its prefix. */
export function toolDirsOf(executable: string, ...roots: string[]): string[] {
  const out = new Set<string>(roots.filter((r) => r && isAbsolute(r)));
  let exe: string | null = null;
  if (executable.includes('/')) exe = real(resolve(executable));
  else
    for (const d of (process.env.PATH ?? '').split(':')) if (d && !exe && existsSync(join(d, executable))) exe = real(join(d, executable));
  if (exe) {
    const bin = dirname(exe);
    // The prefix (bin/..) holds lib/ and libexec/; a prefix that is a home directory is too broad: its bin/ alone.
    out.add(basename(bin) === 'bin' && !tooBroad(dirname(bin)) ? dirname(bin) : bin);
  }
  return [...out].filter((d) => !tooBroad(d) || d.startsWith('/usr/'));
}

// ---------------------------------------------------------------------------------------------
// The simulation executable

export interface JailLimits {
  memoryLimitMb: number | null;
  fileSizeLimitBytes: number;
  /** Wall-clock limit enforced INSIDE the jail with SIGTERM, so the simulation can still write
   * its coverage (a signal to bubblewrap itself would kill the child outright). */
  timeoutS: number;
  /** Cap on what the simulation adds to the run directory in all (bytes over what the compile
   * steps left there), jailed or not: the command then carries a `guard` for runBounded. */
  runDirLimitBytes?: number | null;
}

export interface SharedLibraries {
  /** Library files (the dynamic loader included), as the loader resolved them. */
  files: string[];
  /** Directories outside the loader's default search path: they go in LD_LIBRARY_PATH. */
  searchPath: string[];
  timeout: string;
}

const libCache = new Map<string, Promise<SharedLibraries>>();
/** Where the dynamic loader lives when ldd cannot say (no ldd installed). */
const KNOWN_LOADERS = [
  '/lib64/ld-linux-x86-64.so.2',
  '/lib/ld-linux-aarch64.so.1',
  '/lib/ld-musl-x86_64.so.1',
  '/lib/ld-musl-aarch64.so.1',
];

function onPath(cmd: string): string {
  for (const d of (process.env.PATH ?? '/usr/bin:/bin').split(':'))
    if (d && existsSync(join(d, cmd))) return real(join(d, cmd)) ?? join(d, cmd);
  return `/usr/bin/${cmd}`;
}

/** Parses ldd / `ld.so --list` output: `name => /path (addr)` and `/lib64/ld-linux... (addr)`. */
export function parseLdList(text: string): string[] {
  const out: string[] = [];
  for (const l of text.split('\n')) {
    const m = /=>\s*(\/\S+)/.exec(l) ?? /^\s*(\/\S+)\s+\(/.exec(l);
    if (m) out.push(m[1]);
  }
  return out;
}

/**
 * The shared libraries `exe` links plus those of `timeout`, found by the system's dynamic loader
 * run in list mode on it (the trusted loader maps the libraries and runs none of the executable's
 * code; plain ldd would honour the executable's own interpreter). Every candidate links the same
 * libraries, so the answer is cached under `key`.
 */
export function sharedLibraries(exe: string, key: string): Promise<SharedLibraries> {
  let p = libCache.get(key);
  if (!p) {
    p = (async () => {
      const timeout = onPath('timeout');
      const t = await runBounded('ldd', [timeout], { timeoutS: 30, env: toolEnv() });
      const tLibs = parseLdList(t.stdout);
      const loader = tLibs.find((l) => /\/ld-linux|\/ld64|\/ld-musl|\/ld\.so/.test(l)) ?? KNOWN_LOADERS.find((l) => existsSync(l));
      if (!loader)
        throw new Error(
          `cannot find the dynamic loader ('ldd ${timeout}' printed: ${t.all.trim().slice(0, 200)}); run with CHORUS_NO_JAIL=1 to skip the jail`,
        );
      const l = await runBounded(loader, ['--list', exe], { timeoutS: 30, env: toolEnv() });
      if (l.exitCode !== 0)
        throw new Error(`the dynamic loader cannot list the libraries of the simulation: ${l.all.trim().slice(0, 200)}`);
      const files = [...new Set([...parseLdList(l.stdout), ...tLibs])].filter((f) => existsSync(f));
      const defaults = /^\/(?:usr\/)?lib(?:64|32)?(?:\/[^/]+-linux-gnu\w*)?$/;
      const searchPath = [...new Set(files.map((f) => dirname(f)))].filter((d) => !defaults.test(d));
      return { files, searchPath, timeout };
    })();
    p.catch(() => libCache.delete(key));
    libCache.set(key, p);
  }
  return p;
}

/** The command line that runs `exe args` inside the jail (or just under prlimit without one). */
export function jailCommand(
  jail: JailInfo,
  runDir: string,
  exe: string,
  args: string[],
  limits: JailLimits,
  sandbox?: { design: DesignView; libs: SharedLibraries },
  /** Variables of the run (a group member's CHORUS_MEMBER), set inside the jail. */
  runEnv: Record<string, string> = {},
): { file: string; args: string[]; env: Record<string, string>; guard?: RunGuard } {
  // Measured now, before the run: what the compile steps left is not the simulation's.
  const guard = limits.runDirLimitBytes != null ? runDirGuard(runDir, limits.runDirLimitBytes) : undefined;
  const rl = ['--fsize=' + limits.fileSizeLimitBytes, '--core=0', '--nproc=4096'];
  if (limits.memoryLimitMb !== null) rl.push('--as=' + limits.memoryLimitMb * 1024 * 1024);
  // SIGTERM first so the simulation main writes its coverage; SIGKILL only if that has not finished
  // after 5 s (a loaded machine can starve the handler for seconds; the run's outer bound allows it).
  const timed = ['--signal=TERM', '--kill-after=5', String(limits.timeoutS)];
  // The simulation needs no variable at all; unjailed it still gets only the tool allowlist.
  if (jail.kind === 'none' || !sandbox)
    return { file: 'timeout', args: [...timed, 'prlimit', ...rl, '--', exe, ...args], env: toolEnv(runEnv), ...(guard ? { guard } : {}) };
  const { design, libs } = sandbox;
  const env = [
    ...(libs.searchPath.length ? ['--setenv', 'LD_LIBRARY_PATH', libs.searchPath.join(':')] : []),
    ...Object.entries(runEnv).flatMap(([k, v]) => ['--setenv', k, v]),
  ];
  // prlimit outside: the limits are inherited through bwrap, and the jail needs no prlimit binary.
  return {
    file: 'prlimit',
    args: [
      ...rl,
      '--',
      'bwrap',
      ...isolation(jail),
      ...[libs.timeout, ...libs.files].flatMap((f) => ['--ro-bind', f, f]),
      ...mounts({ writable: [runDir], readOnly: design.paths, hidden: design.hidden, cwd: runDir }),
      '--clearenv',
      ...env,
      '--',
      libs.timeout,
      ...timed,
      exe,
      ...args,
    ],
    env: toolEnv(),
    ...(guard ? { guard } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Totals: the run directory, and memory

/** Files and directories the simulation may add to its run directory before it is stopped: also
 * what bounds the cost of one check. */
export const RUN_DIR_NEW_ENTRIES_LIMIT = 2_000;
/** How often the run directory is measured while the simulation runs. */
export const RUN_DIR_CHECK_MS = 50;

interface Usage {
  bytes: number;
  entries: number;
}

/** Bytes an entry takes: its length or its allocated blocks, whichever is more (a sparse file
 * counts at its length). */
const footprint = (st: Stats): number => Math.max(st.size, st.blocks * 512);

/** The run directory's usage now, counting at most `maxEntries` entries (then: more). Synchronous:
 * on a run directory (a few dozen entries) it takes a fraction of a millisecond, less than the
 * round trips of the asynchronous calls would. */
function usageSync(dir: string, maxEntries: number): Usage {
  const u: Usage = { bytes: 0, entries: 0 };
  const stack = [dir];
  while (stack.length && u.entries <= maxEntries) {
    const d = stack.pop()!;
    let h: Dir;
    try {
      h = opendirSync(d);
    } catch {
      continue;
    }
    try {
      for (let e = h.readSync(); e && ++u.entries <= maxEntries; e = h.readSync()) {
        try {
          const st = lstatSync(join(d, e.name));
          u.bytes += footprint(st);
          if (st.isDirectory()) stack.push(join(d, e.name));
        } catch {
          /* gone meanwhile */
        }
      }
    } finally {
      h.closeSync();
    }
  }
  return u;
}

function size(bytes: number): string {
  const M = 1024 * 1024;
  if (bytes >= M) return bytes % M === 0 ? `${bytes / M} MiB` : `${(bytes / M).toFixed(1)} MiB`;
  return bytes >= 1024 && bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;
}

/**
 * A host-side watch on what a run adds to `runDir` in all (RLIMIT_FSIZE caps each file, not their
 * sum): measured now as the baseline, then every RUN_DIR_CHECK_MS while the run lasts (or ten
 * times as long as the last check took, if more: a check costs at most a tenth of the host's
 * time) and once after it. It works the same jailed or not; between two checks a fast writer can
 * pass the cap by what it writes in that time (measured: ~25 MB in 50 ms).
 */
export function runDirGuard(runDir: string, limitBytes: number, maxNewEntries = RUN_DIR_NEW_ENTRIES_LIMIT): RunGuard {
  const base = usageSync(runDir, 1_000_000);
  const maxEntries = base.entries + maxNewEntries;
  const guard: RunGuard = {
    everyMs: RUN_DIR_CHECK_MS,
    check: () => {
      const t0 = performance.now();
      const now = usageSync(runDir, maxEntries);
      guard.everyMs = Math.max(RUN_DIR_CHECK_MS, Math.ceil(10 * (performance.now() - t0)));
      if (now.entries > maxEntries) return `the simulation created more than ${maxNewEntries} files in its run directory and was stopped`;
      if (now.bytes - base.bytes > limitBytes)
        return `the simulation wrote more than ${size(limitBytes)} into its run directory in all (the files it writes) and was stopped`;
      return undefined;
    },
  };
  return guard;
}

/** Prefix of a step's command line that caps its address space: prlimit, as the simulation's. */
/** `stackUnlimited`: what Verilator's launcher does before it runs the binary (directBinary in
 * verilator/toolchain.ts; only chosen where the hard limit allows it). */
function memoryCap(memoryLimitMb: number | null | undefined, stackUnlimited = false): string[] {
  const stack = stackUnlimited ? ['--stack=unlimited'] : [];
  if (memoryLimitMb != null) return ['prlimit', `--as=${memoryLimitMb * 1024 * 1024}`, '--core=0', ...stack, '--'];
  return stack.length ? ['prlimit', ...stack, '--'] : [];
}

/** What a toolchain step prints when it runs out of memory (each at the start of a line; a source
 * line Verilator or g++ quotes is indented). Measured under prlimit --as. */
const OOM_LINES = [
  // cc1plus (libiberty's xmalloc)
  /^virtual memory exhausted\b/m,
  /^\S*\b(?:cc1plus|cc1|as|collect2|g\+\+|gcc|c\+\+|ld(?:\.\w+)?): out of memory\b/m,
  // cc1plus cannot map the precompiled header into what is left of its address space
  /^\S*: sorry, unimplemented: PCH allocation failure/m,
  // GNU ld: "ld: libstdc++.so: error adding symbols: memory exhausted"
  /^\S*\bld(?:\.\w+)?: .*\bmemory exhausted\s*$/m,
  // Too little address space to load the tool at all
  /^\S+: error while loading shared libraries: .*failed to map segment from shared object/m,
  // Verilator (and any C++ tool): std::bad_alloc
  /^terminate called after throwing an instance of '(?:std::bad_alloc|St9bad_alloc)'/m,
  /^\s*what\(\):\s+std::bad_alloc/m,
];

/** The g++ driver's words when something outside killed cc1plus (SIGKILL: the kernel's OOM
 * killer, an operator); the tools' own limit (RLIMIT_AS) never kills, it fails an allocation. */
const KILLED_LINE = /^\S+: fatal error: Killed signal terminated program\b/m;

/**
 * True when a toolchain step failed for want of memory within its own limit: the tools' own words
 * (OOM_LINES) when an allocation failed under the address-space limit. The candidate's doing.
 */
export function ranOutOfMemory(r: RunResult): boolean {
  if (r.exitCode === 0 || r.timedOut || r.cancelled || r.outputOverflow) return false;
  return OOM_LINES.some((re) => re.test(r.all));
}

/**
 * True when a toolchain step was killed from outside: SIGKILL (or exit 137, how bwrap and
 * wrappers pass it on), or g++ saying cc1plus was killed, that no timeout, cancellation or output
 * cap of ours explains. The kernel's OOM killer under machine pressure, or an operator: not the
 * candidate's result, so the caller scores it again (status `exception`), never a testbench failure.
 */
export function killedFromOutside(r: RunResult): boolean {
  if (r.exitCode === 0 || r.timedOut || r.cancelled || r.outputOverflow) return false;
  return r.signal === 'SIGKILL' || r.exitCode === 137 || KILLED_LINE.test(r.all);
}

/** The message of a compile step killed from outside (killedFromOutside). */
export function killedMessage(what: string): string {
  return `${what} was killed from outside the run (SIGKILL: the kernel's OOM killer under machine memory pressure, or an operator): not a result of the testbench; score it again`;
}

/** The result's words for a compile step that ran out of memory, with its diagnostic (CHORUS-OOM). */
export function outOfMemoryDiagnostic(what: string, limitMb: number | null, file: string, stage: 'lint' | 'build'): Diagnostic {
  const message = `${what} ran out of memory (${limitMb !== null ? `limit ${limitMb} MiB of address space` : "no limit set: the machine's memory"})`;
  return {
    file,
    origin: 'testbench',
    line: 1,
    column: 1,
    severity: 'error',
    code: 'CHORUS-OOM',
    message,
    suggestion:
      'Elaborate less: smaller generate loops and arrays in the testbench (every generated instance becomes C++ to compile); or raise limits.buildMemoryLimitMb.',
    stage,
  };
}
