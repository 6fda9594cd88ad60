// OS-level confinement of everything an untrusted testbench drives: the preprocessor and Verilator
// front end (they read `include files) and the simulation executable (it reads and writes files at
// run time). bubblewrap builds a file system from nothing: the run directory read-write, the
// design directories read-only, and for the simulation only the shared libraries it links (no
// /etc, /home, /root, /tmp); an empty environment, its own /proc and PID namespace, no network,
// and an unprivileged uid where the kernel allows user namespaces. prlimit caps address space and
// file size. When bubblewrap is missing or cannot create namespaces (some containers), runs go
// unjailed, the static check refuses every path it cannot judge, and the result says so.
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { runBounded } from '../util/proc.js';

export interface JailInfo {
  kind: 'bubblewrap' | 'none';
  reason?: string;
  /** User namespaces work: jailed processes run as SANDBOX_UID with no capabilities. Without
   * them (root in a container that forbids user namespaces) they run with every capability dropped. */
  userns: boolean;
}

/** nobody: owns nothing on the host. */
export const SANDBOX_UID = 65534;

/** Variables a toolchain step may see (none is a secret); everything else is left behind, so an
 * API key in the caller's environment never reaches a process a testbench drives. */
const TOOL_ENV = ['PATH', 'VERILATOR_ROOT', 'LANG', 'LC_ALL', 'LC_CTYPE'];

/** The caller's environment reduced to TOOL_ENV: for bwrap itself (its own /proc/1/environ is
 * readable from inside the jail) and for every unjailed step. */
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
    if (user.exitCode === 0) return { kind: 'bubblewrap', userns: true };
    const plain = await runBounded('bwrap', [...base, ...rootCapDrop(), 'true'], { timeoutS: 10, env: toolEnv() });
    if (plain.exitCode !== 0)
      return { kind: 'none', reason: `bubblewrap cannot create a sandbox here: ${plain.stderr.trim().split('\n')[0]}`, userns: false };
    return {
      kind: 'bubblewrap',
      userns: false,
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

/** The namespace flags and the identity, shared by compile and run jails. */
function isolation(jail: JailInfo): string[] {
  const id = jail.userns ? ['--unshare-user', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID)] : rootCapDrop();
  // /dev read-only: its devices still work, but /dev/shm cannot be filled.
  return [
    ...id,
    '--unshare-net',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--die-with-parent',
    '--new-session',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
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
  /** Dot-entries at the top of a shown directory (.git, .env, .ssh): hidden. */
  hidden: string[];
  /** Directories every relative path may resolve into (realpaths): what the static check allows. */
  roots: string[];
  /** Said in the result record. */
  note: string;
}

/**
 * What the testbench may read of the design: every design file's directory and every include
 * directory, unless the directory is a home or system directory (then only the design files and
 * the HDL headers at its top), minus dot-entries. Symlinked design files are shown at their target.
 */
export function designView(files: string[], includeDirs: string[]): DesignView {
  const dirs = new Set<string>();
  const singles = new Set<string>();
  const narrowed: string[] = [];
  for (const f of files) {
    const abs = resolve(f);
    const d = dirname(abs);
    if (tooBroad(d)) {
      singles.add(abs);
      narrowed.push(d);
    } else dirs.add(d);
    const r = real(abs);
    if (r && r !== abs) singles.add(r);
  }
  for (const inc of includeDirs) {
    const d = resolve(inc);
    if (!existsSync(d)) continue;
    if (!tooBroad(d)) {
      dirs.add(d);
      continue;
    }
    narrowed.push(d);
    try {
      for (const n of readdirSync(d))
        if (!n.startsWith('.') && /\.(svh|vh|sv|v|h|inc|pkg)$/i.test(n) && statSync(join(d, n)).isFile()) singles.add(join(d, n));
    } catch {
      /* unreadable: show nothing of it */
    }
  }
  // A directory inside another shown one is already visible.
  const dirList = [...dirs].filter((d) => ![...dirs].some((o) => o !== d && d.startsWith(o + sep)));
  const paths = [...dirList, ...[...singles].filter((f) => !dirList.some((d) => f.startsWith(d + sep)))];
  const hidden: string[] = [];
  for (const d of dirList) {
    try {
      for (const n of readdirSync(d)) if (n.startsWith('.')) hidden.push(join(d, n));
    } catch {
      /* nothing to hide */
    }
  }
  // Single files count as roots too: a header shown alone may be included by its name.
  const roots = [...new Set(paths.map((d) => real(d) ?? d))];
  const note = narrowed.length
    ? `design directories shown read-only: ${dirList.length}; ${[...new Set(narrowed)].join(', ')} too broad to show whole (home or system directory): only the design files and HDL headers in it`
    : `design directories shown read-only: ${dirList.length}`;
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
 * same command with the reduced environment.
 */
export function toolchainCommand(
  jail: JailInfo,
  file: string,
  args: string[],
  view: JailView & { toolDirs: string[] },
): { file: string; args: string[]; env: Record<string, string> } {
  if (jail.kind === 'none') return { file, args, env: toolEnv() };
  const env = toolEnv();
  const setenv = Object.entries(env).flatMap(([k, v]) => ['--setenv', k, v]);
  const extra = view.toolDirs.filter((d) => d !== '/usr' && !d.startsWith('/usr/') && existsSync(d));
  return {
    file: 'bwrap',
    args: [
      ...isolation(jail),
      ...systemMounts(),
      // The private /tmp first: a toolchain or checkout that lives under /tmp (a CI clone, a
      // wheel in a project cache there) is then bound on top of it instead of hidden by it.
      '--tmpfs',
      '/tmp',
      ...extra.flatMap((d) => ['--ro-bind', d, d]),
      ...mounts(view),
      '--clearenv',
      ...setenv,
      '--',
      file,
      ...args,
    ],
    env,
  };
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
): { file: string; args: string[]; env: Record<string, string> } {
  const rl = ['--fsize=' + limits.fileSizeLimitBytes, '--core=0', '--nproc=4096'];
  if (limits.memoryLimitMb !== null) rl.push('--as=' + limits.memoryLimitMb * 1024 * 1024);
  // SIGTERM first so the simulation main writes its coverage; SIGKILL only if that has not finished
  // after 5 s (a loaded machine can starve the handler for seconds; the run's outer bound allows it).
  const timed = ['--signal=TERM', '--kill-after=5', String(limits.timeoutS)];
  // The simulation needs no variable at all; unjailed it still gets only the tool allowlist.
  if (jail.kind === 'none' || !sandbox) return { file: 'timeout', args: [...timed, 'prlimit', ...rl, '--', exe, ...args], env: toolEnv() };
  const { design, libs } = sandbox;
  const env = libs.searchPath.length ? ['--setenv', 'LD_LIBRARY_PATH', libs.searchPath.join(':')] : [];
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
  };
}
