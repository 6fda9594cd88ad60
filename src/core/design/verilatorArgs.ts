// Verilator options a user may pass through (`--verilator-arg ARG`, chorus.json "verilatorArgs"):
// an ALLOWLIST of options that change only how the design is read, warned about and optimized.
// Nothing that writes files, runs programs, loads code or changes paths is let through: the build
// runs in a jail whose outputs, compiler and search paths chorus fixes, and a pass-through option
// must not undo that. Every refusal says why and what to use instead.
import { DesignError } from './errors.js';

/** Options that take the next argument as their value, with the values allowed. */
const VALUED: Record<string, RegExp> = {
  '--x-assign': /^(0|1|fast|unique)$/,
  '--x-initial': /^(0|fast|unique)$/,
  '--default-language': /^(1364-1995|1364-2001|1364-2005|1800-2005|1800-2009|1800-2012|1800-2017|1800-2023|VAMS)$/,
  '--language': /^(1364-1995|1364-2001|1364-2005|1800-2005|1800-2009|1800-2012|1800-2017|1800-2023|VAMS)$/,
  '--unroll-count': /^[0-9]{1,6}$/,
  '--unroll-stmts': /^[0-9]{1,7}$/,
  '--converge-limit': /^[0-9]{1,6}$/,
  '--error-limit': /^[0-9]{1,6}$/,
  '--max-num-width': /^[0-9]{1,7}$/,
};

/** Options without a value, by pattern. */
const FLAGS: RegExp[] = [
  /^-W(no|warn|error)-[A-Za-z0-9_]+$/, // -Wno-WIDTH, -Wwarn-lint, -Werror-IMPLICIT
  /^-W(all|no-fatal|pedantic)$/,
  /^-Wfuture-[A-Za-z0-9_]+$/,
  /^--(no-)?timing$/,
  /^-O[0-3]$/,
  /^-O[a-zA-Z]+$/, // optimizations off by letter
  /^-fno-[a-z0-9-]+$/, // optimizations off by name (5.x)
  /^--bbox-(unsup|sys)$/,
  /^\+(1364-1995|1364-2001|1364-2005|1800-2005|1800-2009|1800-2012|1800-2017|1800-2023)ext\+$/,
  /^--(no-)?assert$/,
  /^--x-initial-edge$/,
  /^--no-std$/,
  /^-sv$/,
];

/** Why a known option is refused, and what to use instead. */
const REFUSED: Array<[RegExp, string]> = [
  [
    /^-(o|-Mdir|Mdir|-prefix|-mod-prefix|-dump.*|-json-only.*|-xml-.*|-hierarchical.*|-lib-create|-protect-.*)$/,
    'it writes files or chooses where output goes (chorus fixes the build folder)',
  ],
  [
    /^-(-exe|-build|-build-jobs|-make|MAKEFLAGS|-compiler|-compiler-include|LDFLAGS|CFLAGS|-gdb.*|-debug.*|-main|-binary|-cc|-sc|-lint-only|-preproc-.*|E)$/,
    'it runs programs or changes how the model is compiled and linked (chorus builds the model itself)',
  ],
  [
    /^-(f|F|v|y|I.*|-top-module|-top|\+incdir\+.*|-relative-includes|-getenv|-valgrind.*)$|^\+incdir\+/,
    "it reads other files or changes search paths: use chorus's own -f / -F / -v / -y / -I / --top",
  ],
  [/^-(D|G).*/, "use chorus's own -D / -G (they reach every Verilator pass and the DUT checks)"],
  [/^-(-coverage.*|-trace.*|-threads|-x-assign=.*|-x-initial=.*)$/, 'chorus sets it for every run (coverage and tracing are its own)'],
  [/^--?(load|plugin|-vpi|-public.*|-savable|-instr-count-dpi|-dpi-.*)/, 'it loads or exposes code'],
];

/**
 * Checks pass-through Verilator options against the allowlist. Returns them normalized (`--opt=v`
 * split into `--opt v`); throws a DesignError (kind 'filelist') naming the first refused one and why.
 * `origin` says where they came from (--verilator-arg, chorus.json "verilatorArgs", a file list).
 */
export function checkVerilatorArgs(args: string[], origin = '--verilator-arg'): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    let a = args[i].trim();
    let value: string | undefined;
    const eq = /^(--[a-z-]+)=(.*)$/.exec(a);
    if (eq && VALUED[eq[1]]) [a, value] = [eq[1], eq[2]];
    if (VALUED[a]) {
      value ??= args[++i];
      if (value === undefined) throw refuse(origin, a, `it needs a value (e.g. ${origin} ${a} ${exampleValue(a)})`);
      if (!VALUED[a].test(value))
        throw refuse(
          origin,
          `${a} ${value}`,
          `the value is not one Verilator accepts here (${VALUED[a].source.replace(/^\^\(?|\)?\$$/g, '').replace(/\|/g, ', ')})`,
        );
      out.push(a, value);
      continue;
    }
    if (FLAGS.some((f) => f.test(a))) {
      out.push(a);
      continue;
    }
    const known = REFUSED.find(([re]) => re.test(a));
    throw refuse(origin, a, known ? known[1] : 'it is not on the list of options chorus lets through (README: Command line conventions)');
  }
  return out;
}

function exampleValue(opt: string): string {
  return opt === '--x-assign' || opt === '--x-initial' ? 'fast' : /language/.test(opt) ? '1800-2017' : '64';
}

function refuse(origin: string, arg: string, why: string): DesignError {
  return new DesignError('filelist', `${origin} '${arg}' is refused: ${why}`);
}
