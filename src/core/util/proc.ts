// Running external tools (simulators, compilers, untrusted executables) with hard bounds:
// wall-clock limit that kills the whole process tree, whatever sessions its members started
// (SIGTERM first so a simulation can still write coverage, SIGKILL after a grace period), captured
// output capped in bytes (the process is killed when it exceeds the cap), and cancellation
// through an AbortSignal. Also the /proc views of processes: a tree, and what a run left behind.
import { readdirSync, readFileSync } from 'node:fs';
import { execa } from 'execa';
import { FOLDED_WEIGHT, LineFolder, type FoldedLine } from './lineFold.js';

export interface RunOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Wall-clock limit in seconds. */
  timeoutS?: number;
  /** Seconds between SIGTERM and SIGKILL on timeout/cancel/overflow. */
  graceS?: number;
  /** Cap on stdout+stderr bytes kept; exceeding it kills the process. */
  outputLimitBytes?: number;
  signal?: AbortSignal;
  input?: string;
  /**
   * Open a fourth descriptor (fd 3) to the child and collect what it writes there, up to this many
   * bytes (more is dropped and flagged): the channel a simulation harness reports on, apart from
   * stdout/stderr, which the testbench writes too.
   */
  reportLimitBytes?: number;
  /** A limit watched while the child runs (the run directory's total size): see RunGuard. */
  guard?: RunGuard;
  /** Keep each output line (its `[time]` prefix set apart) at most this many times; later
   * repeats are counted in `folded`, not kept (lineFold.ts). */
  foldLinesAfter?: number;
}

/**
 * Checked every `everyMs` while the child runs (after the previous check has finished) and once
 * after it exits. A reason stops the process group at once with SIGKILL (nothing is saved from a
 * run that broke a cap) and comes back as `guardStop`.
 */
export interface RunGuard {
  everyMs: number;
  check: () => Promise<string | undefined> | string | undefined;
}

export interface RunResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Interleaved output in arrival order (bounded like stdout/stderr). */
  all: string;
  timedOut: boolean;
  cancelled: boolean;
  outputOverflow: boolean;
  /** The program could not be started at all (ENOENT, EACCES...). */
  spawnError?: string;
  durationS: number;
  /** What the child wrote to fd 3 (only with `reportLimitBytes`). */
  report?: Buffer;
  /** fd 3 carried more than `reportLimitBytes`: `report` is cut. */
  reportOverflow?: boolean;
  /** Why the guard stopped the child, or found its limit broken when it exited (only with `guard`). */
  guardStop?: string;
  /** Repeated lines not kept (only with `foldLinesAfter`), stdout's and stderr's together. */
  folded?: FoldedLine[];
}

export async function runBounded(file: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const start = performance.now();
  const child = spawnDetached(file, args, opts);
  const report = opts.reportLimitBytes !== undefined ? collectReport(child, opts.reportLimitBytes) : null;
  const stopper = treeStopper(child, opts.graceS ?? 2);
  const output = collectOutput(child, opts.outputLimitBytes ?? 16 * 1024 * 1024, opts.foldLinesAfter, stopper.stop);
  if (opts.input !== undefined) child.stdin?.end(opts.input);
  const guard = opts.guard ? watchGuard(opts.guard, stopper.killGroup) : null;
  const limits = watchLimits(opts, stopper.stop);

  const res = await child;
  output.flush();
  limits.clearTimer();
  if (guard) await guard.finish();
  // The leader exited; make sure nothing it spawned survives it.
  stopper.finish();
  limits.detach();

  return {
    exitCode: res.exitCode ?? null,
    signal: res.signal ?? null,
    ...output.text(),
    timedOut: limits.timedOut,
    cancelled: limits.cancelled,
    outputOverflow: output.overflow,
    spawnError: spawnErrorOf(res),
    durationS: (performance.now() - start) / 1000,
    ...(report ? { report: Buffer.concat(report.chunks), reportOverflow: report.overflow } : {}),
    ...(guard?.reason !== undefined ? { guardStop: guard.reason } : {}),
    ...(output.folded ? { folded: output.folded() } : {}),
  };
}

type Child = ReturnType<typeof spawnDetached>;

/** The child, started detached: it leads its own process group, so a timeout kills everything it spawned. */
function spawnDetached(file: string, args: string[], opts: RunOptions) {
  return execa(file, args, {
    cwd: opts.cwd,
    env: opts.env,
    extendEnv: opts.env === undefined,
    detached: true,
    buffer: false,
    reject: false,
    stdio: [
      opts.input === undefined ? 'ignore' : 'pipe',
      'pipe',
      'pipe',
      ...(opts.reportLimitBytes !== undefined ? (['pipe'] as const) : []),
    ],
    cleanup: true,
  });
}

/** What the child writes to fd 3, kept up to `cap` bytes; more is dropped and flagged. */
function collectReport(child: Child, cap: number): { chunks: Buffer[]; readonly overflow: boolean } {
  const report = { chunks: [] as Buffer[], overflow: false };
  let bytes = 0;
  (child.stdio[3] as NodeJS.ReadableStream | undefined)?.on('data', (c: Buffer) => {
    const room = cap - bytes;
    if (c.length > room) report.overflow = true;
    if (room <= 0) return;
    const piece = c.length > room ? c.subarray(0, room) : c;
    report.chunks.push(piece);
    bytes += piece.length;
  });
  return report;
}

/**
 * Stopping the child: `stop` sends SIGTERM to its group and its tree, then SIGKILL after `graceS`;
 * `killGroup` signals the group alone; `finish`, once the child exited, kills what is left.
 */
function treeStopper(child: Child, graceS: number): { stop: () => void; killGroup: (sig: NodeJS.Signals) => void; finish: () => void } {
  let killTimer: NodeJS.Timeout | undefined;
  const killGroup = (sig: NodeJS.Signals): void => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, sig);
    } catch {
      /* already gone */
    }
  };
  // The tree, not only the group: a child may start a session of its own (bubblewrap's
  // --new-session puts the simulation in one), which a signal to the group never reaches; and
  // once its parent is gone it is reparented, out of reach of any later walk from the leader.
  // So the tree is frozen and listed the moment the stop begins, and every member is signalled.
  const tree = new Map<number, number>();
  const signalTree = (sig: NodeJS.Signals): void => {
    if (child.pid === undefined) return;
    for (const p of freezeTree(child.pid, tree)) tree.set(p.pid, p.start);
    killGroup(sig);
    signalListed(tree, sig);
  };
  const stop = (): void => {
    signalTree('SIGTERM');
    if (!killTimer) killTimer = setTimeout(() => signalTree('SIGKILL'), graceS * 1000);
  };
  const finish = (): void => {
    killGroup('SIGKILL');
    if (tree.size) signalListed(tree, 'SIGKILL');
    if (killTimer) clearTimeout(killTimer);
  };
  return { stop, killGroup, finish };
}

/** What collectOutput() kept of the child's stdout and stderr. */
interface OutputCollector {
  readonly overflow: boolean;
  /** Takes in what the line folders still hold (after the child exited). */
  flush(): void;
  text(): { stdout: string; stderr: string; all: string };
  /** The repeated lines not kept (only with foldLinesAfter). */
  folded: (() => FoldedLine[]) | null;
}

/** The child's stdout and stderr, kept (and interleaved in `all`) up to `limit` bytes together;
 * past it the child is stopped (`stop`) and `overflow` set. */
function collectOutput(child: Child, limit: number, foldLinesAfter: number | undefined, stop: () => void): OutputCollector {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const all: Buffer[] = [];
  let kept = 0;
  let outputOverflow = false;
  const take = (bucket: Buffer[], chunk: Buffer): void => {
    const room = limit - kept;
    if (room <= 0) {
      if (!outputOverflow) {
        outputOverflow = true;
        stop();
      }
      return;
    }
    const piece = chunk.length > room ? chunk.subarray(0, room) : chunk;
    bucket.push(piece);
    all.push(piece);
    kept += piece.length;
    if (chunk.length > room && !outputOverflow) {
      outputOverflow = true;
      stop();
    }
  };
  const folders = foldLinesAfter !== undefined ? [new LineFolder(foldLinesAfter), new LineFolder(foldLinesAfter)] : null;
  // Folded repeats weigh 1/FOLDED_WEIGHT against the limit: a flood is counted, endless output still ends.
  const fold = (i: 0 | 1, bucket: Buffer[], c: Buffer): void => {
    take(bucket, folders![i].push(c));
    if (!outputOverflow && (folders![0].droppedBytes + folders![1].droppedBytes) / FOLDED_WEIGHT > limit - kept) {
      outputOverflow = true;
      stop();
    }
  };
  child.stdout?.on('data', (c: Buffer) => (folders ? fold(0, out, c) : take(out, c)));
  child.stderr?.on('data', (c: Buffer) => (folders ? fold(1, err, c) : take(err, c)));
  return {
    get overflow() {
      return outputOverflow;
    },
    flush: () => {
      if (!folders) return;
      take(out, folders[0].flush());
      take(err, folders[1].flush());
    },
    text: () => ({
      stdout: Buffer.concat(out).toString('utf8'),
      stderr: Buffer.concat(err).toString('utf8'),
      all: Buffer.concat(all).toString('utf8'),
    }),
    folded: folders ? () => [...folders[0].folded(), ...folders[1].folded()] : null,
  };
}

/**
 * Runs the guard's check every `everyMs` while the child runs; a reason kills the group and is
 * kept as `reason`. `finish`, once the child exited, waits for a check under way and checks once
 * more: what the child left behind counts too (a burst between two checks).
 */
function watchGuard(
  guard: RunGuard,
  killGroup: (sig: NodeJS.Signals) => void,
): { readonly reason: string | undefined; finish: () => Promise<void> } {
  let guardStop: string | undefined;
  let guardTimer: NodeJS.Timeout | undefined;
  let guardBusy: Promise<void> | undefined;
  let exited = false;
  const guarded = async (): Promise<void> => {
    let why: string | undefined;
    try {
      why = (await guard.check()) || undefined;
    } catch {
      why = undefined; // a check that cannot run stops nothing
    }
    if (why && guardStop === undefined) {
      guardStop = why;
      if (!exited) killGroup('SIGKILL');
    }
  };
  const guardTick = (): void => {
    guardBusy = guarded().then(() => {
      if (!exited && guardStop === undefined) guardTimer = setTimeout(guardTick, guard.everyMs);
    });
  };
  guardTimer = setTimeout(guardTick, guard.everyMs);
  return {
    get reason() {
      return guardStop;
    },
    finish: async () => {
      exited = true;
      clearTimeout(guardTimer);
      await guardBusy;
      if (guardStop === undefined) await guarded();
    },
  };
}

/** The wall-clock limit and the cancel signal: either stops the child (`stop`) and is flagged. */
function watchLimits(
  opts: RunOptions,
  stop: () => void,
): { readonly timedOut: boolean; readonly cancelled: boolean; clearTimer: () => void; detach: () => void } {
  let timedOut = false;
  let cancelled = false;
  const timer =
    opts.timeoutS !== undefined
      ? setTimeout(() => {
          timedOut = true;
          stop();
        }, opts.timeoutS * 1000)
      : undefined;
  const onAbort = (): void => {
    cancelled = true;
    stop();
  };
  if (opts.signal) {
    if (opts.signal.aborted) onAbort();
    else opts.signal.addEventListener('abort', onAbort, { once: true });
  }
  return {
    get timedOut() {
      return timedOut;
    },
    get cancelled() {
      return cancelled;
    },
    clearTimer: () => {
      if (timer) clearTimeout(timer);
    },
    detach: () => opts.signal?.removeEventListener('abort', onAbort),
  };
}

/** Why the program could not be started at all (ENOENT, EACCES...), from execa's result. */
function spawnErrorOf(res: Awaited<Child>): string | undefined {
  const failed = res as unknown as { code?: string; originalMessage?: string; exitCode?: number; signal?: string };
  return res.exitCode === undefined && res.signal === undefined && failed.code
    ? `${failed.code}: ${failed.originalMessage ?? ''}`
    : undefined;
}

/** Whether a process with this id exists (EPERM: it does, as another user's). */
export function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A process as Linux's /proc/<pid>/stat describes it. */
export interface ProcessInfo {
  pid: number;
  ppid: number;
  /** The kernel's short name (comm), e.g. Vtb, verilator_bin, cc1plus. */
  name: string;
  /** Start time in clock ticks since boot: with the pid, names one process even after pid reuse. */
  start: number;
}

/** The process ids /proc lists (none where there is no /proc). */
function procPids(): number[] {
  try {
    return readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .map(Number);
  } catch {
    return [];
  }
}

function processTable(): ProcessInfo[] {
  return procPids().flatMap((pid) => processInfo(pid) ?? []);
}

function processInfo(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm may contain spaces and parentheses: the fields after it follow the last ')'.
    const close = stat.lastIndexOf(')');
    const name = stat.slice(stat.indexOf('(') + 1, close);
    const rest = stat.slice(close + 2).split(' ');
    return { pid, ppid: Number(rest[1]), name, start: Number(rest[19]) };
  } catch {
    return undefined; // gone meanwhile, or no /proc
  }
}

/** Processes anywhere on the machine (but this one) whose command line contains `text`: how a
 * check finds what a run left behind, orphans reparented away from this process included. */
export function processesNaming(text: string): number[] {
  return procPids().filter((pid) => {
    if (pid === process.pid) return false;
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
    } catch {
      return false;
    }
  });
}

/** Every process below `root` (Linux /proc; empty elsewhere), whatever its group or session. */
export function descendants(root = process.pid, table = processTable()): ProcessInfo[] {
  const out: ProcessInfo[] = [];
  const parents = new Set([root]);
  // Repeat until no new child: /proc order is not parent-first.
  for (let grew = true; grew;) {
    grew = false;
    for (const p of table) {
      if (!parents.has(p.pid) && parents.has(p.ppid)) {
        parents.add(p.pid);
        out.push(p);
        grew = true;
      }
    }
  }
  return out;
}

/**
 * Stops (SIGSTOP) `root` and everything below it, walking again until no new process appears, so
 * nothing forks or leaves the tree while it is signalled; each of `known` (pid -> start time) that
 * is still that process is stopped too. Returns every process it stopped: the caller signals them
 * with signalListed, which also lets them go on (SIGCONT).
 */
function freezeTree(root: number, known: Map<number, number>): ProcessInfo[] {
  const stopped = new Map<number, ProcessInfo>();
  const stop = (p: ProcessInfo | undefined): void => {
    if (!p || stopped.has(p.pid)) return;
    try {
      process.kill(p.pid, 'SIGSTOP');
      stopped.set(p.pid, p);
    } catch {
      /* gone */
    }
  };
  stop(processInfo(root));
  for (const [pid, start] of known) {
    const p = processInfo(pid);
    if (p?.start === start) stop(p);
  }
  for (let round = 0; round < 8; round++) {
    const fresh = descendants(root).filter((p) => !stopped.has(p.pid));
    if (!fresh.length) break;
    for (const p of fresh) stop(p);
  }
  return [...stopped.values()];
}

/** Sends `sig` to each listed process that is still the one listed (same start time), then
 * SIGCONT so a stopped one acts on it (a SIGTERM handler writes its coverage). */
function signalListed(list: Map<number, number>, sig: NodeJS.Signals): void {
  for (const [pid, start] of list) {
    if (processInfo(pid)?.start !== start) continue;
    for (const s of [sig, 'SIGCONT'] as const) {
      try {
        process.kill(pid, s);
      } catch {
        /* gone */
      }
    }
  }
}
