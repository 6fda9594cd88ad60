// What every `chorus` command does the same way: parse options (design options shared), answer
// --help, report usage errors with exit code 2, read numeric options.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DESIGN_OPTIONS } from './designOptions.js';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface Parsed<O extends Options> {
  values: ReturnType<typeof parseArgs<{ options: O & typeof DESIGN_OPTIONS & { help: { type: 'boolean'; short: 'h' } }; allowPositionals: true }>>['values'];
  positionals: string[];
  fail: (msg: string) => number;
}

/** Parses argv for `chorus <name>`; returns an exit code instead when done (help, usage error). */
export function parseCommand<O extends Options>(name: string, argv: string[], options: O, help: string): Parsed<O> | number {
  const fail = (msg: string): number => {
    process.stderr.write(`chorus ${name}: ${msg}\n`);
    return 2;
  };
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { ...DESIGN_OPTIONS, ...options, help: { type: 'boolean', short: 'h' } } as O & typeof DESIGN_OPTIONS & { help: { type: 'boolean'; short: 'h' } } });
  } catch (e) {
    process.stderr.write(`chorus ${name}: ${(e as Error).message}\n\n${help}`);
    return 2;
  }
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(help);
    return 0;
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
