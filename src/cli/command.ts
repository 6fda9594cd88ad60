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
import { closest, safeText } from '../core/run/frontEnd.js';
import { DesignError } from '../core/run/sources.js';
import { RunFolderError } from '../core/run/runFolder.js';
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
export const runFolderError = (e: unknown): string | undefined => (e instanceof RunFolderError ? e.message : undefined);
export const toolchainError = (e: unknown): string | undefined => (e instanceof ToolchainError ? e.message : undefined);
export const modelError = (e: unknown): string | undefined =>
  e instanceof ModelError ? `model error (${e.kind}): ${e.message}` : undefined;
export const contextBudgetError = (e: unknown): string | undefined => (e instanceof ContextBudgetError ? e.message : undefined);

/** The errors of a command that loads a design and runs a model on it (generate, refine). */
export const MODEL_RUN_ERRORS = [designError, toolchainError, modelError, contextBudgetError, runFolderError];

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
  const table = { ...(takesDesign ? DESIGN_OPTIONS : {}), ...options, help: { type: 'boolean', short: 'h' } } as AllOptions<O>;
  let parsed;
  try {
    parsed = parseArgs({
      args: negativeValues(takesDesign ? verilatorStyle(argv) : argv, table),
      allowPositionals: true,
      strict: true,
      options: table,
    });
  } catch (e) {
    return fail(usageMessage(e as Error & { code?: string }, argv, table, name));
  }
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(help);
    return EXIT.ok;
  }
  return { values: parsed.values, positionals: parsed.positionals, fail };
}

/**
 * Verilator's (and xrun's, VCS's) spellings of the design options, as engineers type them, turned
 * into chorus's: `+incdir+a+b` (-I a -I b), `+define+X=1+Y` (-D X=1 -D Y), `+libext+.v+.sv`
 * (--libext), and `--verilator-arg -Wno-WIDTH` (a value starting with a dash, which parseArgs
 * would otherwise take for an option). Everything after `--` is left alone.
 */
export function verilatorStyle(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      out.push(...argv.slice(i));
      break;
    }
    const plus = /^\+(incdir|define|libext)\+(.*)$/.exec(a);
    if (plus) {
      const flag = plus[1] === 'incdir' ? '-I' : plus[1] === 'define' ? '-D' : '--libext';
      for (const v of plus[2].split('+').filter(Boolean)) out.push(`${flag}=${v}`.replace(/^-([ID])=/, '-$1'));
    } else if (a === '--verilator-arg' && i + 1 < argv.length) out.push(`--verilator-arg=${argv[++i]}`);
    else out.push(a);
  }
  return out;
}

/** `--rounds -1` as `--rounds=-1`: a negative number after a valued option is its value (the
 * range check then names the option), not an unknown option `-1`. */
function negativeValues(argv: string[], table: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') return [...out, ...argv.slice(i)];
    const next = argv[i + 1];
    if (/^--[\w-]+$/.test(a) && next !== undefined && /^-[\d.]/.test(next) && table[a.slice(2)]?.type === 'string') {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

type ParseError = Error & { code?: string };

/** One line for a parseArgs error: the option, the closest known one, where the list is. */
export function usageMessage(e: ParseError, argv: string[], table: Options, name: string): string {
  const see = `chorus ${name} --help lists the options`;
  const known = Object.entries(table).flatMap(([long, o]) => [`--${long}`, ...(o.short ? [`-${o.short}`] : [])]);
  if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const reported = /Unknown option '([^']+)'/.exec(e.message)?.[1] ?? '';
    // parseArgs reports `-Wno-X` as '-W' (a short option group): name what was typed.
    const typed = (argv.find((a) => a === reported || a.startsWith(reported)) ?? reported).replace(/=.*$/, '');
    if (/^(-W|-O|--x-|--timing$|--no-timing$|--bbox|\+1[0-9]{3})/.test(typed))
      return `unknown option '${typed}': a Verilator option? pass it with --verilator-arg ${typed} (${see})`;
    const guess = closest(typed, known);
    return `unknown option '${typed}'${guess ? `; did you mean ${guess}?` : ''} (${see})`;
  }
  const missing = /Option '(-\w, )?(--[\w-]+) <value>' argument missing/.exec(e.message);
  if (missing) return `option ${missing[2]} needs a value (${see})`;
  return `${e.message.split('\n')[0]} (${see})`;
}

export interface NumberRange {
  /** Largest value allowed. */
  max?: number;
  /** The value must be above `min`, not equal to it (timeouts: > 0). */
  above?: boolean;
  /** A whole number (rounds, samples, seeds). */
  integer?: boolean;
}

/** A numeric option: the default when absent, an error naming the option and its range when
 * malformed or out of range. */
export function numberOption(name: string, v: string | undefined, dflt: number, min = 0, range: NumberRange = {}): number {
  if (v === undefined) return dflt;
  const n = v.trim() === '' ? NaN : Number(v);
  const max = range.max ?? Infinity;
  const ok = Number.isFinite(n) && (range.above ? n > min : n >= min) && n <= max && (!range.integer || Number.isInteger(n));
  if (!ok) {
    const kind = range.integer ? 'a whole number' : 'a number';
    const span = Number.isFinite(max) ? `from ${min} to ${max}` : `${range.above ? '>' : '>='} ${min}`;
    throw new Error(`--${name} must be ${kind} ${span}, got '${v}'`);
  }
  return n;
}

/**
 * The exit code of a finished simulation (README "Exit code"): 0 it ran, coverage was measured and
 * the design's assertions held; 2 the design is at fault (a combinational loop in the DUT that does
 * not settle, any error the record pins on the DUT) or the harness could not run it (exception);
 * 1 the testbench failed, or its stimulus broke the design's assertions (in every score mode).
 */
export function exitCodeFor(r: {
  status: string;
  diagnostics?: Array<{ severity: string; origin?: string; code?: string }>;
  dutAssertions?: unknown[];
}): number {
  if (r.status === 'success') return r.dutAssertions?.length ? EXIT.failed : EXIT.ok;
  if (r.status === 'exception') return EXIT.usage;
  const dutFault = (r.diagnostics ?? []).some((d) => d.severity === 'error' && d.origin === 'dut' && d.code === 'CHORUS-COMBLOOP');
  return dutFault ? EXIT.usage : EXIT.failed;
}

/** parseArgs rows for options that take a value (`--name <v>`), typed by name. */
export function strings<const K extends string>(...names: K[]): { readonly [P in K]: { readonly type: 'string' } } {
  return Object.fromEntries(names.map((n) => [n, { type: 'string' }])) as { readonly [P in K]: { readonly type: 'string' } };
}

/** parseArgs rows for on/off options (`--name`), typed by name. */
export function flags<const K extends string>(...names: K[]): { readonly [P in K]: { readonly type: 'boolean' } } {
  return Object.fromEntries(names.map((n) => [n, { type: 'boolean' }])) as { readonly [P in K]: { readonly type: 'boolean' } };
}

/** --out, --force and --json: where a command also writes its result, and whether it prints JSON. */
export const RESULT_OPTIONS = { ...strings('out'), ...flags('force', 'json') };
