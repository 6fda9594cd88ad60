// How the CLI talks to a terminal: whether to colour, whether to redraw a status line, its
// version, and its exit codes (one table, documented in the README).

/** Exit codes of every `chorus` command. */
export const EXIT = {
  ok: 0,
  /** The testbench (or an evaluation task) failed: compile, run, time-out, refused. */
  failed: 1,
  /** A usage error (unknown option, missing argument) or a design error (the DUT does not compile,
   * no or several top candidates, a missing file) or a toolchain error: something for the user to fix. */
  usage: 2,
  /** A bug in chorus itself: an exception nothing expected. Please report it with the stack. */
  internal: 70,
  /** Cancelled with Ctrl-C (128 + SIGINT). */
  interrupted: 130,
} as const;

declare const __CHORUS_VERSION__: string | undefined;

/** The package version, stamped into the bundle by esbuild (scripts/esbuild.config.mjs); when the
 * sources run unbundled (tests), read from package.json. */
export async function chorusVersion(): Promise<string> {
  if (typeof __CHORUS_VERSION__ === 'string') return __CHORUS_VERSION__;
  const { readFile } = await import('node:fs/promises');
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

type Env = Record<string, string | undefined>;

/**
 * Colour on `stream`, by the conventions users set once for all their tools: NO_COLOR (any
 * non-empty value) turns colour off; FORCE_COLOR turns it on (`0` or `false` off); TERM=dumb
 * turns it off; otherwise colour only on a terminal.
 */
export function useColor(stream: { isTTY?: boolean }, env: Env = process.env): boolean {
  if (env.NO_COLOR) return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return !(force === '0' || force.toLowerCase() === 'false');
  if (env.TERM === 'dumb') return false;
  return stream.isTTY === true;
}

/** Whether a line may be redrawn in place (`\r`, erase-line): a terminal that understands it. */
export function canRedraw(stream: { isTTY?: boolean }, env: Env = process.env): boolean {
  return stream.isTTY === true && env.TERM !== 'dumb';
}
