// The static check against the compiler: generated testbenches mix the lexical forms that have
// fooled text checks before (escaped identifiers, attributes, strings with escapes and line
// continuations, both kinds of comment, `ifdef VERILATOR_TIMING / COVERAGE, `line, `pragma,
// `begin_keywords, macros, token pasting) with a forbidden construct ($system, $c, a DPI import,
// $fopen of an absolute path) hidden in one or two of them. Verilator's own parse of the build
// (--xml-only on 5.006, --json-only on current releases; the build's flags) is the oracle:
// whenever it holds the construct, the text passes (checkTestbench on the source, checkPreprocessed
// on `verilator -E` with the build's flags) must refuse the testbench. Testbenches of noise alone
// must pass untouched. Fixed seed and count here; CHORUS_FUZZ_RUNS / CHORUS_FUZZ_SEED run it
// longer or elsewhere (a failure prints the seed, the path and the shrunk testbench).
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { scratchDir } from '../helpers.js';
import { checkPreprocessed, checkTestbench } from '../../src/core/sim/safety.js';
import { findToolchain, versionFlags } from '../../src/core/sim/verilator/toolchain.js';
import { VERILATOR_FLAGS } from '../../src/core/sim/verilator/backend.js';

const run = promisify(execFile);
const RUNS = Number(process.env.CHORUS_FUZZ_RUNS ?? 400);
const SEED = Number(process.env.CHORUS_FUZZ_SEED ?? 20260517);
const TB = 'tb.sv';

type Kind = 'system' | 'ccode' | 'dpi' | 'file';

/** A piece of testbench text: its lines, whether it must stay on one line, what it compiles. */
interface Piece {
  text: string;
  /** Forbidden constructs Verilator compiles from it (as far as the generator knows). */
  kinds: Kind[];
  /** True when the piece may not be split over lines (it sits inside one-line syntax). */
  oneLine: boolean;
  /** Text a correct check must leave alone (the construct sits in a string or a comment). */
  inert: boolean;
}

let uid = 0;
const fresh = (): number => ++uid;

// Characters of escaped identifiers: anything printable, the troublemakers often.
const escChar = fc.constantFrom(...'abcxyz019_$"/*()\\;,.:[]{}<>=+-!#%&|~^?@\''.split(''), '/*', '*/', '//', '"', '(*', '*)');
const escId = (): fc.Arbitrary<string> => fc.array(escChar, { minLength: 1, maxLength: 6 }).map((cs) => `\\e${fresh()}${cs.join('')}`);

// Text for string bodies: escapes, comment marks, quotes, forbidden names, a line continuation.
const strBit = fc.constantFrom(
  'a',
  'Z',
  ' ',
  '\\"',
  '\\\\',
  '\\n',
  '\\t',
  '\\101',
  '//',
  '/*',
  '*/',
  '$system("x")',
  '$c(',
  'import \\"DPI-C\\"',
  '\\\n',
  '(*',
  '*)',
  '`',
);
const strBody = fc.array(strBit, { maxLength: 6 }).map((b) => b.join(''));
// Comment text (never "verilator": that would be a metacomment).
const cmtBit = fc.constantFrom('a', ' ', '"', "'", '//', '/*', '$system("x");', '$c("1;");', '`define', '\\', '(*', '*)', 'import "DPI-C"');

/** Harmless text: no forbidden construct, whatever it looks like. */
const harmless = (text: string, oneLine = false): Piece => ({ text, kinds: [], oneLine, inert: false });

const noise: fc.Arbitrary<Piece> = fc.oneof(
  escId().map((id) => harmless(`wire ${id} ;`, true)),
  fc
    .array(fc.constantFrom('a', ' ', '"', '/', '*', '//', '$system', '`x', '\\'), { maxLength: 5 })
    .map((b) => b.join('').replace(/"/g, '').replace(/\*\)/g, '* )').replace(/\*$/, '* '))
    .map((v) => harmless(`(* fz_attr${fresh()} = "${v}" *) wire fz_aw${fresh()};`, true)),
  strBody.map((s) => harmless(`initial $display("${s}");`)),
  fc.array(cmtBit, { maxLength: 5 }).map((b) => harmless(`// ${b.join('')}`)),
  fc.array(fc.oneof(cmtBit, fc.constant('\n')), { maxLength: 6 }).map((b) => harmless(`/* ${b.join('').replace(/\*\//g, '* /')} */`)),
  fc.nat(500).map((n) => harmless(`\`line ${n + 10} "${TB}" 0`)),
  fc.constant(harmless('`pragma fz_pragma plain words')),
  fc.constant(null).map(() => {
    const k = fresh();
    return harmless(`\`define FZN${k} wire fz_mw${k};\n\`FZN${k}`);
  }),
);

/** The forbidden constructs, each on one line; the DPI import with the ways to spell "DPI-C". */
const DPI_SPELLINGS = ['"DPI-C"', '"\\104PI-C"', '"DPI"', '"D\\120I-C"'];
const CONSTRUCTS: Array<(variant: number) => Piece> = [
  () => ({ text: 'initial $system("true");', kinds: ['system'], oneLine: true, inert: false }),
  () => ({ text: 'initial $c("1;");', kinds: ['ccode'], oneLine: true, inert: false }),
  (v) => ({
    text: `import ${DPI_SPELLINGS[v % DPI_SPELLINGS.length]} function int dpi_fn();`,
    kinds: ['dpi'],
    oneLine: true,
    inert: false,
  }),
  () => ({
    text: `initial begin : fzb${fresh()} integer fd; fd = $fopen("/tmp/chorus_fuzz", "w"); end`,
    kinds: ['file'],
    oneLine: true,
    inert: false,
  }),
];
const construct: fc.Arbitrary<Piece> = fc.tuple(fc.nat(CONSTRUCTS.length - 1), fc.nat(7)).map(([k, v]) => CONSTRUCTS[k](v));

/** Ways to hide a piece; each says what Verilator then compiles of it. */
type Hide = (p: Piece) => Piece | null;
const multi = (p: Piece, text: string, compiled: boolean): Piece => ({
  text,
  kinds: compiled ? p.kinds : [],
  oneLine: false,
  inert: false,
});
const HIDES: Record<string, Hide> = {
  plain: (p) => p,
  ifdefTiming: (p) => multi(p, `\`ifdef VERILATOR_TIMING\n${p.text}\n\`endif`, true),
  ifdefCoverage: (p) => multi(p, `\`ifdef COVERAGE\n${p.text}\n\`endif`, false),
  ifndefElse: (p) => multi(p, `\`ifndef VERILATOR_TIMING\nwire fz_n${fresh()};\n\`else\n${p.text}\n\`endif`, true),
  escComment: (p) => {
    const k = fresh();
    return multi(p, `wire \\c1_${k}/* ;\n${p.text}\nwire \\c2_${k}*/ ;`, true);
  },
  escQuote: (p) => {
    const k = fresh();
    return multi(p, `wire \\q${k}" ;\n${p.text}\nwire \\r${k}" ;`, true);
  },
  attribute: (p) =>
    p.oneLine || !p.text.includes('\n') ? { ...p, text: `(* fa = " *) ${p.text} (* fb = " *) wire fz_t${fresh()};`, oneLine: true } : null,
  inString: (p) =>
    p.text.includes('\n')
      ? null
      : { text: `initial $display("${p.text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}");`, kinds: [], oneLine: true, inert: true },
  inComment: (p) => ({ text: `/* ${p.text.replace(/\*\//g, '* /')} */`, kinds: [], oneLine: false, inert: true }),
  inLineComment: (p) => (p.text.includes('\n') ? null : { text: `// ${p.text}`, kinds: [], oneLine: true, inert: true }),
  macroUsed: (p) => {
    if (p.text.includes('\n')) return null;
    const k = fresh();
    return multi(p, `\`define HID${k} ${p.text}\n\`HID${k}`, true);
  },
  macroUnused: (p) => (p.text.includes('\n') ? null : multi(p, `\`define UNU${fresh()} ${p.text}`, false)),
  pasted: (p) => {
    const k = fresh();
    if (p.kinds[0] === 'system') return multi(p, `\`define PS${k}(a) $sys\`\`a\ninitial \`PS${k}(tem)("true");`, true);
    if (p.kinds[0] === 'ccode') return multi(p, `\`define PC${k}(a) $\`\`a\ninitial \`PC${k}(c)("1;");`, true);
    if (p.kinds[0] === 'dpi') return multi(p, `\`define PD${k}(a) \`"a\`"\nimport \`PD${k}(DPI-C) function int dpi_fn();`, true);
    return null;
  },
  pragmaComment: (p) => multi(p, `\`pragma fz /*\n${p.text}\n// */`, true),
  macroPragma: (p) => {
    const k = fresh();
    return multi(p, `\`define PR${k} \`pragma\n\`PR${k} fz /*\n${p.text}\n// */`, true);
  },
  defineValueComment: (p) => {
    if (p.text.includes('\n')) return null;
    const k = fresh();
    return multi(p, `\`define DX${k} \\dx${k}/* ; ${p.text} /* */\nwire \`DX${k}`, true);
  },
  keywords: (p) => multi(p, `\`begin_keywords "1800-2017"\n${p.text}\n\`end_keywords`, true),
};

/** Hides that let the construct through are drawn three times as often as those that do not. */
const INERT_HIDES = new Set(['ifdefCoverage', 'inString', 'inComment', 'inLineComment', 'macroUnused']);
const hideName = fc.oneof(
  { arbitrary: fc.constantFrom(...Object.keys(HIDES).filter((h) => !INERT_HIDES.has(h))), weight: 3 },
  { arbitrary: fc.constantFrom(...INERT_HIDES), weight: 1 },
);
/** The construct under one to three hides, innermost first (a hide that cannot wrap is skipped). */
const hidden: fc.Arbitrary<Piece> = fc
  .tuple(construct, fc.array(hideName, { minLength: 1, maxLength: 3 }))
  .map(([c, hides]) => hides.reduce((p, h) => HIDES[h](p) ?? p, c));

interface Case {
  text: string;
  kinds: Kind[];
  benign: boolean;
  inert: boolean;
}

function assemble(before: Piece[], attack: Piece | null, after: Piece[], keywords: boolean): Case {
  const items = [...before, ...(attack ? [attack] : []), ...after];
  const text = [
    '`timescale 1ns/1ps',
    ...(keywords ? ['`begin_keywords "1800-2017"'] : []),
    'module tb;',
    items.map((p) => p.text).join('\n'),
    'initial begin #1 $finish; end',
    'endmodule',
    ...(keywords ? ['`end_keywords'] : []),
    '',
  ].join('\n');
  return { text, kinds: items.flatMap((p) => p.kinds), benign: !attack, inert: attack?.inert ?? false };
}

const testbench: fc.Arbitrary<Case> = fc
  .tuple(fc.array(noise, { maxLength: 4 }), fc.option(hidden, { freq: 5 }), fc.array(noise, { maxLength: 3 }), fc.boolean())
  .map(([before, attack, after, keywords]) => assemble(before, attack, after, keywords));

/** Run first, every time: each construct under each hide, and the pairs where a hide that fools
 * text checks sits inside one that fools lexers. */
const TEXT_HIDES = ['pragmaComment', 'macroPragma', 'defineValueComment', 'attribute', 'pasted', 'macroUsed'];
const LEXER_HIDES = ['escComment', 'escQuote', 'ifdefTiming', 'ifndefElse', 'keywords', 'macroUsed'];
const EXAMPLES: Case[] = [
  ...CONSTRUCTS.flatMap((make, k) => Object.values(HIDES).map((hide, v) => assemble([], hide(make(v + k)) ?? make(v), [], false))),
  ...[0, 2].flatMap((k) =>
    TEXT_HIDES.flatMap((inner) =>
      LEXER_HIDES.map((outer) => {
        const p = CONSTRUCTS[k](1);
        return assemble([], HIDES[outer](HIDES[inner](p) ?? p) ?? p, [], false);
      }),
    ),
  ),
];

/** What Verilator's parse of the build holds, by a plain search of its output. */
function oracle(out: string, json: boolean): Set<Kind> {
  const found = new Set<Kind>();
  if (json) {
    if (/"type":\s*"SYSTEM[FT]"/.test(out)) found.add('system');
    if (/"type":\s*"(?:CSTMTUSER|CEXPRUSER|UCSTMT|UCFUNC|SYSTEMCSECTION)"/.test(out)) found.add('ccode');
    if (/"type":\s*"FUNC",\s*"name":\s*"dpi_fn"[^{}]*"dpiImport":\s*true/.test(out)) found.add('dpi');
    if (/"type":\s*"FOPEN"[^{}]*"filenamep":\s*\[\s*\{"type":\s*"CONST",\s*"name":\s*"\\\\\\"\//.test(out)) found.add('file');
  } else {
    if (/<system[ft][\s/>]/.test(out)) found.add('system');
    if (/<(?:ucstmt|ucfunc|schdr|scint|scimp|scimphdr|scctor|scdtor)[\s/>]/.test(out)) found.add('ccode');
    if (/<func [^>]*name="dpi_fn"/.test(out)) found.add('dpi');
    if (/<fopen [^>]*>\s*<varref [^>]*\/>\s*<const [^>]*name="\d+&apos;h2f/.test(out)) found.add('file');
  }
  return found;
}

describe('the static check against Verilator (property-based)', () => {
  it(`refuses every testbench whose parse holds a forbidden construct, and no noise (${RUNS} runs, seed ${SEED})`, async () => {
    const tc = await findToolchain();
    const json = tc.caps.jsonOnly || !tc.caps.xmlOnly;
    const root = scratchDir('chorus-fuzz-');
    const flags = [...versionFlags(tc, VERILATOR_FLAGS), '--top-module', 'tb', '-Mdir', 'obj'];
    const stats = { parsed: 0, failed: 0, attacks: 0, benign: 0 };
    let n = 0;
    await fc.assert(
      fc.asyncProperty(testbench, async (c) => {
        const dir = join(root, String(n++));
        mkdirSync(dir);
        writeFileSync(join(dir, TB), c.text);
        const out = json
          ? ['--json-only', '--json-only-output', 'n.json', '--json-only-meta-output', 'n.meta.json']
          : ['--xml-only', '--xml-output', 'n.xml'];
        const [pre, parse] = await Promise.all(
          [
            ['-E', ...flags, TB],
            [...flags, ...out, TB],
          ].map((args) =>
            run(tc.verilator, args, { cwd: dir, maxBuffer: 64 * 1024 * 1024 }).then(
              (r) => ({ ok: true, stdout: r.stdout }),
              (e: { stdout?: string }) => ({ ok: false, stdout: e.stdout ?? '' }),
            ),
          ),
        );
        const netlist = json ? join(dir, 'n.json') : join(dir, 'n.xml');
        if (!parse.ok || !existsSync(netlist)) {
          // Verilator refuses the testbench: nothing would be built.
          stats.failed++;
          rmSync(dir, { recursive: true, force: true });
          return;
        }
        stats.parsed++;
        const present = oracle(readFileSync(netlist, 'utf8'), json);
        const opts = { jailed: true, file: TB };
        const refused = [...checkTestbench(c.text, opts), ...(pre.ok ? checkPreprocessed(pre.stdout, opts) : [])];
        // A failed -E pass where the parse succeeded is refused by the engine (CHORUS-CHECK).
        const rejected = refused.length > 0 || !pre.ok;
        rmSync(dir, { recursive: true, force: true });
        if (present.size) {
          stats.attacks++;
          expect(rejected, `Verilator compiles ${[...present].join(', ')} that the check let through:\n${c.text}`).toBe(true);
        }
        if (c.benign || c.inert) {
          if (c.benign) stats.benign++;
          expect(present.size, `the generator's harmless testbench compiles ${[...present].join(', ')}:\n${c.text}`).toBe(0);
          expect(
            refused.map((d) => `${d.code} ${d.line}: ${d.message}`),
            `a harmless testbench was refused:\n${c.text}`,
          ).toEqual([]);
        }
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true, examples: EXAMPLES.map((c) => [c]) },
    );
    console.log(`fuzz: ${JSON.stringify(stats)}`);
    // The run must have exercised both sides.
    expect(stats.parsed).toBeGreaterThan(RUNS / 3);
    expect(stats.attacks).toBeGreaterThan(RUNS / 10);
    expect(stats.benign).toBeGreaterThan(RUNS / 20);
  }, 600_000);
});
