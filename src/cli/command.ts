// What every `chorus` command does the same way: parse options (the design options for the
// commands that take a design), answer --help, report usage errors with exit code 2 (EXIT.usage),
// read numeric options. Options a command does not use are rejected, never silently accepted.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DESIGN_OPTIONS } from './designOptions.js';
import { EXIT } from './terminal.js';
import { safeText } from '../core/util/untrusted.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface Parsed<O extends Options> {
  values: ReturnType<
    typeof parseArgs<{ options: O & typeof DESIGN_OPTIONS & { help: { type: 'boolean'; short: 'h' } }; allowPositionals: true }>
  >['values'];
  positionals: string[];
  fail: (msg: string) => number;
}

/**
 * Parses argv for `chorus <name>`; returns an exit code instead when done (help, usage error).
 * `takesDesign`: the command reads a design (sim, generate, refine), so -f/-I/-D/-G/--top apply;
 * elsewhere they are unknown options.
 */
export function parseCommand<O extends Options>(
  name: string,
  argv: string[],
  options: O,
  help: string,
  takesDesign = true,
): Parsed<O> | number {
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
      options: { ...(takesDesign ? DESIGN_OPTIONS : {}), ...options, help: { type: 'boolean', short: 'h' } } as O &
        typeof DESIGN_OPTIONS & { help: { type: 'boolean'; short: 'h' } },
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
