// Reward integrity, totals and reach: limits on what a run adds up to, not only per file and per
// step, and what the simulation can reach of itself.
// - The run directory's total: a testbench writing many files, each under the per-file cap, is
//   stopped at runDirLimitBytes (a host-side watch, jailed or not), as is one creating files
//   without end.
// - Compile memory: every compile step runs under buildMemoryLimitMb, and running out of it is
//   named as such (CHORUS-OOM), with the step and the limit.
// - No /proc in the simulation: its own memory and the descriptor the harness reports on are out
//   of reach; dot-files below the top of a design directory are hidden too.
// Small caps through SimRequest.limits keep every case to seconds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { counterTb, examples, read, runResult, scratchDir, sim } from '../helpers.js';
import { loadDesign } from '../../src/core/run/design.js';
import type { DesignInfo, DesignSpec } from '../../src/core/design/types.js';
import type { SimLimits } from '../../src/core/vocabulary/types.js';
import type { SimResult } from '../../src/core/sim/result.js';
import { killedFromOutside, ranOutOfMemory, RUN_DIR_NEW_ENTRIES_LIMIT, runDirGuard } from '../../src/core/sim/jail.js';
import { runBounded, type RunResult } from '../../src/core/util/proc.js';

const saved = process.env.CHORUS_NO_JAIL;
let DESIGN = '';
let design: DesignSpec;
let info: DesignInfo;

beforeAll(async () => {
  DESIGN = scratchDir('chorus-totals-design-');
  copyFileSync(join(examples, 'counter', 'counter.sv'), join(DESIGN, 'counter.sv'));
  mkdirSync(join(DESIGN, 'sub', '.git'), { recursive: true });
  writeFileSync(join(DESIGN, 'sub', '.secret'), 'nested-canary-5b1f\n');
  writeFileSync(join(DESIGN, 'sub', '.git', 'config'), 'nested-canary-5b1f\n');
  ({ design, info } = await loadDesign({ files: [join(DESIGN, 'counter.sv')], top: 'counter' }));
});

afterAll(() => {
  if (saved === undefined) delete process.env.CHORUS_NO_JAIL;
  else process.env.CHORUS_NO_JAIL = saved;
});

const tbWith = (body: string): string => counterTb(body);

/** Writes ~200 KB to each named file (literal names: the static check allows them unjailed), then `tail`. */
const writer = (names: string[], tail: string): string =>
  tbWith(`  integer fd; string line;
  initial begin
    line = "";
    repeat (100) line = {line, "0123456789"};
${names.map((n) => `    fd = $fopen("${n}", "w"); repeat (200) $fwrite(fd, "%s\\n", line); $fclose(fd);`).join('\n')}
    ${tail}
  end`);

const SIX = ['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt', 'f.txt'];
/** Each file stays under the per-file cap; together they pass the run directory's. */
const SMALL: Partial<SimLimits> = { outputLimitBytes: 256 * 1024, runDirLimitBytes: 512 * 1024, timeoutS: 30 };

const simulate = (tb: string, limits: Partial<SimLimits> = {}): Promise<SimResult> =>
  sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: tb }, limits, build: 'flat' });

const codes = (r: SimResult): string[] => r.diagnostics.filter((d) => d.severity === 'error').map((d) => d.code ?? '');

for (const mode of ['jail', 'no jail'] as const) {
  describe(`totals, ${mode === 'jail' ? 'bubblewrap jail' : 'CHORUS_NO_JAIL=1'}`, () => {
    beforeAll(() => {
      if (mode === 'no jail') process.env.CHORUS_NO_JAIL = '1';
      else delete process.env.CHORUS_NO_JAIL;
    });

    it('many files, each under the per-file cap, are stopped at the run directory cap', async () => {
      const r = await simulate(writer(SIX, '$finish;'), SMALL);
      expect(r.protection.jail).toBe(mode === 'jail' ? 'bubblewrap' : 'none');
      expect(r.status, r.err_msg).toBe('xrun_failed');
      expect(r.stage).toBe('run');
      expect(r.reward).toBe(0);
      expect(r.err_msg).toContain('wrote more than 512 KiB');
      expect(r.err_msg).toMatch(/run directory in all/);
      expect(codes(r)).toContain('CHORUS-OUTPUT');
    });

    it('the same files are fine under the default cap: what the build left in the run directory does not count', async () => {
      const r = await simulate(writer(SIX, '$finish;'), { outputLimitBytes: 256 * 1024 });
      expect(r.status, r.err_msg).toBe('success');
    });

    it('a testbench that passes the cap and keeps running is stopped at once, not at the time limit', async () => {
      const r = await simulate(writer(SIX, 'forever #5 clk = ~clk;'), SMALL);
      expect(r.status, r.err_msg).toBe('xrun_failed');
      expect(r.err_msg).toMatch(/run directory in all/);
      expect(r.timings.run!).toBeLessThan(10);
    });

    it('a compile step out of memory says so: the front end', async () => {
      // 100 x 100 generated processes: verilator_bin peaks near 100 MiB.
      const big = tbWith(`  logic [31:0] acc [0:99][0:99];
  genvar i, j;
  for (i = 0; i < 100; i++) begin : gi
    for (j = 0; j < 100; j++) begin : gj
      always @(posedge clk) acc[i][j] <= acc[i][j] + i * j + 1;
    end
  end
  initial begin #10 clk = 1; #10 $finish; end`);
      const r = await simulate(big, { buildMemoryLimitMb: 60 });
      expect(r.status, r.err_msg).toBe('xrun_failed');
      expect(r.stage).toBe('lint');
      expect(r.err_msg).toBe("Verilator's front end ran out of memory (limit 60 MiB of address space)");
      expect(codes(r)).toEqual(['CHORUS-OOM']);
      expect(r.reward).toBe(0);
    });

    it('a compile step out of memory says so: the C++ compile', async () => {
      // The front end needs ~17 MiB for the counter, cc1plus ~175 MiB.
      const r = await simulate(read(join(examples, 'counter', 'tb_counter.sv')), { buildMemoryLimitMb: 100 });
      expect(r.status, r.err_msg).toBe('xrun_failed');
      expect(r.stage).toBe('build');
      expect(r.err_msg).toBe('the C++ compile ran out of memory (limit 100 MiB of address space)');
      expect(codes(r)).toEqual(['CHORUS-OOM']);
    });
  });
}

describe('the simulation jail', () => {
  beforeAll(() => {
    delete process.env.CHORUS_NO_JAIL;
  });

  it('a testbench creating files without end is stopped', async () => {
    const r = await simulate(
      tbWith(`  integer fd, i;
  initial begin
    for (i = 0; ; i++) begin fd = $fopen($sformatf("f%0d", i), "w"); $fclose(fd); end
  end`),
      { timeoutS: 30 },
    );
    expect(r.status, r.err_msg).toBe('xrun_failed');
    expect(r.err_msg).toContain(`created more than ${RUN_DIR_NEW_ENTRIES_LIMIT} files in its run directory`);
    expect(r.timings.run!).toBeLessThan(10);
  });

  it('has no /proc: its memory, its descriptors (the report channel) and /dev/fd are out of reach', async () => {
    // Names held in variables: no check before the run can judge them, the jail must stop them.
    const r = await simulate(
      tbWith(`  integer mem, memw, fd3, devfd, self, stdout; string p[6];
  initial begin
    p[0] = {"/pro", "c/self/mem"}; p[1] = {"/pro", "c/self/fd/3"}; p[2] = {"/de", "v/fd/3"};
    p[3] = {"/pro", "c/self/status"}; p[4] = {"/de", "v/stdout"};
    mem = $fopen(p[0], "r");
    memw = $fopen(p[0], "w");
    fd3 = $fopen(p[1], "w");
    devfd = $fopen(p[2], "w");
    self = $fopen(p[3], "r");
    stdout = $fopen(p[4], "w");
    $display("reach mem=%0d memw=%0d fd3=%0d devfd=%0d self=%0d stdout=%0d", mem, memw, fd3, devfd, self, stdout);
    $finish;
  end`),
    );
    expect(r.status, r.err_msg).toBe('success');
    expect(r.protection.jail).toBe('bubblewrap');
    expect(r.log).toContain('reach mem=0 memw=0 fd3=0 devfd=0 self=0 stdout=0');
  });

  it('dot-files below the top of a design directory are hidden from paths built at run time', async () => {
    const cut = (p: string): string => `{"${p.slice(0, 4)}", "${p.slice(4)}"}`;
    const r = await simulate(
      tbWith(`  integer a, b; string s1, s2, p1, p2;
  initial begin
    s1 = "none"; s2 = "none";
    p1 = ${cut(join(DESIGN, 'sub', '.secret'))}; p2 = ${cut(join(DESIGN, 'sub', '.git', 'config'))};
    a = $fopen(p1, "r");
    if (a != 0) void'($fgets(s1, a));
    b = $fopen(p2, "r");
    if (b != 0) void'($fgets(s2, b));
    $display("got [%s] [%s]", s1, s2);
    $finish;
  end`),
    );
    expect(r.status, r.err_msg).toBe('success');
    expect(r.log).toMatch(/got \[\S*\] \[none\]/);
    expect(JSON.stringify(r)).not.toContain('nested-canary');
  });
});

describe('the pieces', () => {
  const result = (fields: Partial<RunResult>): RunResult => runResult({ exitCode: 1, durationS: 1, ...fields });

  it('knows a toolchain out of memory by its own words, not by a quoted source line', () => {
    for (const all of [
      'virtual memory exhausted: Cannot allocate memory\n',
      'cc1plus: out of memory allocating 65536 bytes after a total of 1048576 bytes\n',
      '/usr/bin/ld.gold: out of memory\ncollect2: error: ld returned 1 exit status\n',
      '/usr/bin/ld: /usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.so: error adding symbols: memory exhausted\n',
      '/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus: error while loading shared libraries: libzstd.so.1: failed to map segment from shared object\n',
      "terminate called after throwing an instance of 'St9bad_alloc'\n  what():  std::bad_alloc\n%Error: Verilator aborted.\n",
      '<command-line>: sorry, unimplemented: PCH allocation failure\n',
    ])
      expect(ranOutOfMemory(result({ all })), all).toBe(true);
    // A kill from outside (the kernel's OOM killer, an operator) is not the candidate running out of
    // its own memory: it is scored again (killedFromOutside), never blamed on the testbench.
    expect(ranOutOfMemory(result({ signal: 'SIGKILL', exitCode: null }))).toBe(false);
    expect(killedFromOutside(result({ signal: 'SIGKILL', exitCode: null }))).toBe(true);
    expect(
      killedFromOutside(result({ all: 'g++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.\n' })),
    ).toBe(true);
    expect(killedFromOutside(result({ signal: 'SIGKILL', exitCode: null, timedOut: true }))).toBe(false);
    expect(killedFromOutside(result({ all: 'virtual memory exhausted\n' }))).toBe(false);
    // Not: a source line quoted in an error, a timeout's kill, a success, any other failure.
    expect(ranOutOfMemory(result({ all: "%Error: tb.sv:3:5: syntax error\n    3 | virtual memory exhausted: 'std::bad_alloc'\n" }))).toBe(
      false,
    );
    expect(ranOutOfMemory(result({ signal: 'SIGKILL', exitCode: null, timedOut: true }))).toBe(false);
    expect(ranOutOfMemory(result({ exitCode: 0, all: 'virtual memory exhausted\n' }))).toBe(false);
    expect(ranOutOfMemory(result({ all: "tb.sv:1: error: 'x' was not declared\n" }))).toBe(false);
  });

  it('the run directory watch counts what was added since it started, bytes and entries', async () => {
    const d = scratchDir('chorus-totals-run-');
    writeFileSync(join(d, 'Vtb'), Buffer.alloc(300_000));
    mkdirSync(join(d, 'obj'));
    for (let i = 0; i < 20; i++) writeFileSync(join(d, 'obj', `f${i}.o`), Buffer.alloc(10_000));
    const g = runDirGuard(d, 100_000, 5);
    expect(await g.check()).toBeUndefined();
    writeFileSync(join(d, 'a'), Buffer.alloc(60_000));
    expect(await g.check()).toBeUndefined();
    writeFileSync(join(d, 'obj', 'b'), Buffer.alloc(60_000));
    expect(await g.check()).toMatch(/wrote more than 100000 bytes into its run directory in all/);
    const e = runDirGuard(d, 1 << 30, 5);
    for (let i = 0; i < 5; i++) writeFileSync(join(d, `n${i}`), '');
    expect(await e.check()).toBeUndefined();
    writeFileSync(join(d, 'n5'), '');
    expect(await e.check()).toMatch(/created more than 5 files/);
  });

  it('runBounded stops a process its guard finds over its limit, at once, and checks once more after exit', async () => {
    let over = false;
    const t0 = performance.now();
    setTimeout(() => (over = true), 300);
    const r = await runBounded('sleep', ['30'], { timeoutS: 60, guard: { everyMs: 50, check: () => (over ? 'over the cap' : undefined) } });
    expect(r.guardStop).toBe('over the cap');
    expect(r.signal).toBe('SIGKILL');
    expect(performance.now() - t0).toBeLessThan(5000);
    // A burst between two checks: found after the exit.
    let calls = 0;
    const after = await runBounded('true', [], { guard: { everyMs: 10_000, check: () => (++calls >= 1 ? 'burst' : undefined) } });
    expect(after.exitCode).toBe(0);
    expect(after.guardStop).toBe('burst');
    const fine = await runBounded('true', [], { guard: { everyMs: 10, check: () => undefined } });
    expect(fine.guardStop).toBeUndefined();
  });
});
