// OS-level confinement of the simulation executable: bubblewrap gives it a read-only view of the
// file system except its run directory, no network and its own PID namespace (so a timeout kill
// takes every process it started); prlimit caps address space and file size. When bubblewrap is
// missing or cannot create namespaces (some containers), runs go unjailed and the result says so.
import { runBounded } from '../util/proc.js';

export interface JailInfo {
  kind: 'bubblewrap' | 'none';
  reason?: string;
}

let probe: Promise<JailInfo> | undefined;

export function detectJail(): Promise<JailInfo> {
  if (process.env.CHORUS_NO_JAIL === '1') return Promise.resolve({ kind: 'none', reason: 'disabled by CHORUS_NO_JAIL=1' });
  probe ??= (async (): Promise<JailInfo> => {
    const r = await runBounded('bwrap', ['--ro-bind', '/', '/', '--dev', '/dev', '--unshare-net', '--unshare-pid', '--die-with-parent', 'true'], {
      timeoutS: 10,
    });
    if (r.spawnError) return { kind: 'none', reason: 'bubblewrap (bwrap) is not installed: apt-get install bubblewrap' };
    if (r.exitCode !== 0) return { kind: 'none', reason: `bubblewrap cannot create a sandbox here: ${r.stderr.trim().split('\n')[0]}` };
    return { kind: 'bubblewrap' };
  })();
  return probe;
}

export interface JailLimits {
  memoryLimitMb: number | null;
  fileSizeLimitBytes: number;
  /** Wall-clock limit enforced INSIDE the jail with SIGTERM, so the simulation can still write
   * its coverage (a signal to bubblewrap itself would kill the child outright). */
  timeoutS: number;
}

/** The command line that runs `exe args` inside the jail (or just under prlimit without one). */
export function jailCommand(jail: JailInfo, runDir: string, exe: string, args: string[], limits: JailLimits): { file: string; args: string[] } {
  const rl = ['--fsize=' + limits.fileSizeLimitBytes, '--core=0', '--nproc=4096'];
  if (limits.memoryLimitMb !== null) rl.push('--as=' + limits.memoryLimitMb * 1024 * 1024);
  const limited = ['timeout', '--signal=TERM', '--kill-after=2', String(limits.timeoutS), 'prlimit', ...rl, '--', exe, ...args];
  if (jail.kind === 'none') return { file: limited[0], args: limited.slice(1) };
  return {
    file: 'bwrap',
    args: [
      '--ro-bind', '/', '/',
      '--dev', '/dev',
      '--proc', '/proc',
      '--tmpfs', '/tmp',
      '--bind', runDir, runDir,
      '--chdir', runDir,
      '--unshare-net',
      '--unshare-pid',
      '--unshare-ipc',
      '--die-with-parent',
      '--new-session',
      ...limited,
    ],
  };
}
