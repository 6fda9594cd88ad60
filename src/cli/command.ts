// The frame every `chorus` command runs in (sim, generate, refine, eval, serve), so they behave
// alike and none repeats it: parse the options (the design options for the commands that take a
// design), answer --help, report usage errors with exit code 2 (EXIT.usage), hand the body an
// AbortSignal that Ctrl-C fires, and turn what the body throws into an exit code: a failure the
// user can fix (a design, a toolchain, a model) prints one line and exits 2, an error after Ctrl-C
// exits 130, anything else is a bug and goes on to main (exit 70 with the stack). Options a
// command does not use are rejected, never silently accepted.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DESIGN_OPTIONS } from './designOptions.js';
import { EXIT } from './terminal.js';
import { StatusLine } from './progress.js';
import { safeText } from '../core/run/frontEnd.js';
import { DesignError } from '../core/run/sources.js';
import { ToolchainError } from '../core/run/toolchain.js';
import { ModelError, ContextBudgetError } from '../core/run/models.js';

type Options = NonNullable<ParseArgsConfig['options']>;
type AllOptions<O extends Options> = O & typeof DESIGN_OPTIONS & { help: { type: 'boolean'; short: 'h' } };

export interface Parsed<O extends Options> {
  values: ReturnType<typeof parseArgs<{ options: AllOptions<O>; allowPositionals: true }>>['values'];
  positionals: string[];
  /** Prints `chorus <name>: <msg>` on stderr (as text, never control sequences); returns 2. */
  fail: (msg: string) => number;
}

/** What a command's body gets from the frame. */
export interface CommandRun<O extends Options> extends Parsed<O> {
  /** Fires on Ctrl-C (interrupt `cancel` or `cancel-once`): the work under way stops. */
  signal: AbortSignal;
  /** The redrawn progress line on stderr; cleared before an error is printed. */
  status: StatusLine;
  /** Interrupt `drain` (serve): resolves once `onSignal` has finished for a SIGTERM or SIGINT;
   * `count` says which signal this is (1 the first), so a second can cut the first's grace. */
  untilSignal(onSignal: (sig: NodeJS.Signals, count: number) => Promise<void>): Promise<void>;
}

/**
 * How Ctrl-C works:
 * - `cancel`: every Ctrl-C aborts `signal`; an error the body throws afterwards is the interrupt
 *   (exit 130, no message). Listening stays on (`on`, not `once`): node-llama-cpp loads
 *   signal-exit, which re-sends SIGINT (killing the process before the cancel is handled) when it
 *   finds itself the only listener left.
 * - `cancel-once` (sim, no model): the first Ctrl-C aborts `signal` and errors are reported as they
 *   are (a cancelled design load is a design error); a second ends the process (Node's default).
 * - `drain` (serve): nothing up front; the body waits with untilSignal() for SIGTERM or SIGINT.
 */
export type Interrupt = 'cancel' | 'cancel-once' | 'drain';

/** A failure the user can fix: the message to print (exit 2); undefined when `e` is not one. */
export type UserError<O extends Options> = (e: unknown, run: CommandRun<O>) => string | undefined;

export interface CommandSpec<O extends Options> {
  name: string;
  options: O;
  help: string;
  /** The command reads a design (sim, generate, refine), so -f/-I/-D/-G/--top apply; elsewhere
   * they are unknown options. Default true. */
  takesDesign?: boolean;
  /** Default `cancel`. */
  interrupt?: Interrupt;
  /** Tried in order on what the body throws; an error none claims is a bug (rethrown: exit 70). */
  errors?: UserError<O>[];
}

export const designError = (e: unknown): string | undefined =>
  e instanceof DesignError ? `design error (${e.kind}): ${e.message}` : undefined;
export const toolchainError = (e: unknown): string | undefined => (e instanceof ToolchainError ? e.message : undefined);
export const modelError = (e: unknown): string | undefined =>
  e instanceof ModelError ? `model error (${e.kind}): ${e.message}` : undefined;
export const contextBudgetError = (e: unknown): string | undefined => (e instanceof ContextBudgetError ? e.message : undefined);

/** Runs `chorus <spec.name> argv`: parses, then the body in the frame; resolves to the exit code. */
export async function runCommand<O extends Options>(
  argv: string[],
  spec: CommandSpec<O>,
  body: (run: CommandRun<O>) => Promise<number>,
): Promise<number> {
  const args = parseCommand(spec.name, argv, spec.options, spec.help, spec.takesDesign ?? true);
  if (typeof args === 'number') return args;
  const interrupt = spec.interrupt ?? 'cancel';
  const controller = new AbortController();
  const onSigint = (): void => controller.abort();
  if (interrupt === 'cancel') process.on('SIGINT', onSigint);
  else if (interrupt === 'cancel-once') process.once('SIGINT', onSigint);
  const run: CommandRun<O> = { ...args, signal: controller.signal, status: new StatusLine(), untilSignal };
  try {
    return await body(run);
  } catch (e) {
    run.status.clear();
    if (interrupt === 'cancel' && controller.signal.aborted) return EXIT.interrupted; // e.g. Ctrl-C while the model loads
    for (const claim of spec.errors ?? []) {
      const msg = claim(e, run);
      if (msg !== undefined) return args.fail(msg);
    }
    throw e;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

/** Waits for SIGTERM or SIGINT; resolves when `onSignal` has finished for one of them. */
function untilSignal(onSignal: (sig: NodeJS.Signals, count: number) => Promise<void>): Promise<void> {
  return new Promise<void>((resolve) => {
    let count = 0;
    const done = (): void => {
      process.removeListener('SIGTERM', on);
      process.removeListener('SIGINT', on);
      resolve();
    };
    const on = (sig: NodeJS.Signals): void => void onSignal(sig, ++count).then(done);
    process.on('SIGTERM', on);
    process.on('SIGINT', on);
  });
}

/** Parses argv for `chorus <name>`; returns an exit code instead when done (help, usage error). */
function parseCommand<O extends Options>(name: string, argv: string[], options: O, help: string, takesDesign: boolean): Parsed<O> | number {
  const fail = (msg: string): number => {
    // Messages quote tools, model servers and simulations: text, never control sequences.
    process.stderr.write(`chorus ${name}: ${safeText(msg)}\n`);
    return EXIT.usage;
  };
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { ...(takesDesign ? DESIGN_OPTIONS : {}), ...options, help: { type: 'boolean', short: 'h' } } as AllOptions<O>,
    });
  } catch (e) {
    process.stderr.write(`chorus ${name}: ${(e as Error).message}\n\n${help}`);
    return EXIT.usage;
  }
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(help);
    return EXIT.ok;
  }
  return { values: parsed.values, positionals: parsed.positionals, fail };
}

/** A numeric option: the default when absent, an error naming the option when malformed. */
export function numberOption(name: string, v: string | undefined, dflt: number, min = 0): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new Error(`--${name} must be a number >= ${min}, got '${v}'`);
  return n;
}
