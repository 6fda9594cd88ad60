// Issue 42: a group of testbenches for one design is scored with shared work (one slang process,
// shared C++ units, slots), and each member gets exactly the result it gets alone. The group mixes
// a good testbench, a weak one, one that fails to compile, one that times out, one that breaks the
// jail's rules, one that forges a coverage report, and copies, so that one bad member is seen not to
// change, fail or hold back the others' results. Run jailed and unjailed.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { examples, read } from '../helpers.js';
import { loadDesign } from '../../src/core/run/design.js';
import { VerilatorSimulator } from '../../src/core/sim/verilator/backend.js';
import type { SimRequest } from '../../src/core/sim/simulator.js';
import type { SimResult } from '../../src/core/sim/result.js';
import type { DesignInfo, DesignSpec } from '../../src/core/design/types.js';

const good = read(join(examples, 'counter', 'tb_counter.sv'));
const weak = read(join(examples, 'counter', 'tb_counter_weak.sv'));
const weakWith = (body: string): string => weak.replace(/endmodule\s*$/, `${body}\nendmodule\n`);

/** The members: name and testbench text. Distinct texts, so no cache can answer for another. */
const MEMBERS: Array<[string, string]> = [
  // First, so that it runs before the others: it tries to write over the executable in its run
  // directory (where it may write). Its own run holds the file busy, and each member runs its own
  // copy anyway: the others' runs are untouched either way.
  [
    'rewrites-exe',
    weakWith(
      '  integer fd;\n  initial begin\n    fd = $fopen("Vtb", "w");\n    if (fd != 0) begin $fwrite(fd, "junk"); $fclose(fd); end\n  end',
    ),
  ],
  ['good', good],
  ['weak', weak],
  // Verilator accepts it, the C++ compiler does not: an out-of-range shift count in a constant
  // initializer would be too fragile; an undeclared identifier fails Verilator itself, which is
  // the lint stage. Both are "fails to compile": the lint one is what a model writes.
  ['no-compile', weakWith('  initial begin undeclared_signal = 1; end')],
  ['timeout', weakWith('  initial begin forever begin end end')],
  ['jail', weakWith('  initial begin $system("cat /etc/passwd"); end')],
  [
    'forger',
    weakWith(
      '  integer fd;\n  initial begin\n    fd = $fopen("coverage.dat", "w");\n    $fwrite(fd, "C \'x\' 99\\n");\n    $fclose(fd);\n  end',
    ),
  ],
  ['good-2', `// a second copy\n${good}`],
  ['weak-2', `// a second copy\n${weak}`],
];

/** What must be the same whichever way a member is scored. */
function verdict(r: SimResult): unknown {
  return {
    status: r.status,
    stage: r.stage,
    reward: r.reward,
    returncode: r.returncode,
    err_msg: r.err_msg,
    coverage: r.coverage,
    // the run's own wall time is the one figure that may differ
    cov_info: r.cov_info && { ...r.cov_info, runtime_sec: 0 },
    uncovered: r.uncovered,
    diagnostics: r.diagnostics,
    dutAssertions: r.dutAssertions,
    tbTop: r.tbTop,
  };
}

const groupScratch = (): string[] => readdirSync(tmpdir()).filter((f) => f.startsWith('chorus-group-'));

describe.each([
  ['jailed', undefined],
  ['unjailed', '1'],
])('a group of testbenches (%s)', (_label, noJail) => {
  let design: DesignSpec;
  let info: DesignInfo;
  const saved = process.env.CHORUS_NO_JAIL;

  beforeAll(async () => {
    ({ design, info } = await loadDesign({ files: [join(examples, 'counter', 'counter.sv')], top: 'counter' }));
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.CHORUS_NO_JAIL;
    else process.env.CHORUS_NO_JAIL = saved;
  });

  it('gives every member exactly its result alone, in order, and leaves nothing behind', async () => {
    if (noJail) process.env.CHORUS_NO_JAIL = noJail;
    else delete process.env.CHORUS_NO_JAIL;
    const req = ([name, content]: [string, string]): SimRequest => ({
      design,
      top: info.top,
      testbench: { name: `tb_${name.replace(/-/g, '_')}.sv`, content },
      limits: { timeoutS: 3 },
    });
    const before = groupScratch();
    const alone: SimResult[] = [];
    for (const m of MEMBERS) alone.push(await new VerilatorSimulator().simulate(req(m)));
    const grouped = await new VerilatorSimulator().simulateGroup(MEMBERS.map(req), { parallel: 2 });

    expect(grouped).toHaveLength(MEMBERS.length);
    MEMBERS.forEach(([name], k) =>
      expect({ name, ...(verdict(grouped[k]) as object) }).toEqual({ name, ...(verdict(alone[k]) as object) }),
    );
    const byName = Object.fromEntries(MEMBERS.map(([name], k) => [name, grouped[k]]));
    // The mix is what it claims to be: each kind of member ended its own way.
    expect(byName.good.status).toBe('success');
    expect(byName.weak.status).toBe('success');
    expect(byName.weak.coverage!.waived.overall!).toBeLessThan(byName.good.coverage!.waived.overall!);
    expect(byName['no-compile'].status).toBe('xrun_failed');
    expect(byName.timeout.status).toBe('timeout');
    expect(byName.jail.status).toBe('rejected');
    expect(byName.forger.coverage?.waived.overall).toBe(byName.weak.coverage?.waived.overall);
    // The members that could share did: their C++ was compiled in shared units.
    for (const name of ['good', 'weak', 'good-2', 'weak-2', 'forger', 'timeout', 'rewrites-exe'])
      expect(byName[name].build?.sharedUnit, name).toBeGreaterThanOrEqual(2);
    for (const r of alone) expect(r.build?.sharedUnit).toBeUndefined();
    expect(groupScratch().filter((d) => !before.includes(d))).toEqual([]);
    for (const r of grouped) if (r.protection.scratchDir) expect(existsSync(r.protection.scratchDir)).toBe(false);
  }, 240_000);
});
