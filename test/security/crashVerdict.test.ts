// Issue 40: a testbench that makes the simulator crash is a verdict, not a service failure. A
// Verilator that crashes on a marked testbench stands in for the internal errors (V3Width,
// V3LinkDot, V3Delayed) real releases hit on odd but legal code: the wrapper below runs the real
// Verilator for everything else. A crash that comes back on the second run is a failed run with
// reward 0 and the position named; one that does not (a host fault) leaves the second run's result.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { examples, read, scratchDir } from '../helpers.js';
import { loadDesign } from '../../src/core/run/design.js';
import { VerilatorSimulator } from '../../src/core/sim/verilator/backend.js';
import type { DesignInfo, DesignSpec } from '../../src/core/design/types.js';

const weak = read(join(examples, 'counter', 'tb_counter_weak.sv'));
const saved = process.env.CHORUS_VERILATOR;
let dir: string;
let design: DesignSpec;
let info: DesignInfo;

beforeAll(async () => {
  dir = scratchDir('crash-verdict');
  const real = execFileSync('bash', ['-c', 'command -v verilator'], { encoding: 'utf8' }).trim();
  const wrapper = join(dir, 'verilator');
  // Crashes Verilator's parse of a testbench that holds CRASH_ALWAYS, or CRASH_ONCE while the
  // state file is absent (then creates it); -E (the preprocessor) always runs the real one.
  writeFileSync(
    wrapper,
    `#!/bin/bash
for a in "$@"; do [ "$a" = -E ] && exec ${real} "$@"; done
for a in "$@"; do
  case "$a" in *.sv)
    if [ -f "$a" ] && grep -q CRASH_ALWAYS "$a"; then echo "%Error: Internal Error: $(basename "$a"):9:5: ../V3Width.cpp:1234: Unexpected node type"; exit 1; fi
    if [ -f "$a" ] && grep -q CRASH_ONCE "$a" && [ ! -e ${dir}/crashed-once ]; then touch ${dir}/crashed-once 2>/dev/null; kill -SEGV $$; fi
  ;; esac
done
exec ${real} "$@"
`,
  );
  chmodSync(wrapper, 0o755);
  process.env.CHORUS_VERILATOR = wrapper;
  ({ design, info } = await loadDesign({ files: [join(examples, 'counter', 'counter.sv')], top: 'counter' }));
}, 120_000);

afterAll(() => {
  if (saved === undefined) delete process.env.CHORUS_VERILATOR;
  else process.env.CHORUS_VERILATOR = saved;
  rmSync(dir, { recursive: true, force: true });
});

const sim = new VerilatorSimulator();
const withMark = (mark: string): string => weak.replace(/endmodule\s*$/, `  // ${mark}\nendmodule\n`);

describe(`a crash on the candidate (${process.env.CHORUS_NO_JAIL === '1' ? 'no jail' : 'jailed'})`, () => {
  it('is a failed run with reward 0, the position and the reason, after a second run crashed the same way', async () => {
    const r = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: withMark('CRASH_ALWAYS') } });
    expect(r.status, r.err_msg).toBe('xrun_failed');
    expect(r.reward).toBe(0);
    expect(r.err_msg).toMatch(/crashed with an internal error on this code .*V3Width.*same crash on a second run/);
    const d = r.diagnostics.find((x) => x.code === 'CHORUS-CRASH')!;
    expect(d).toMatchObject({ file: 'tb.sv', line: 9, column: 5, origin: 'testbench' });
    expect(d.suggestion).toBeTruthy();
  }, 120_000);

  it.runIf(process.env.CHORUS_NO_JAIL === '1')(
    'a crash that does not come back leaves the second run standing',
    async () => {
      const r = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: withMark('CRASH_ONCE') } });
      expect(existsSync(join(dir, 'crashed-once'))).toBe(true);
      expect(r.status, r.err_msg).toBe('success');
      expect(r.reward).toBeGreaterThan(1);
    },
    120_000,
  );
});
