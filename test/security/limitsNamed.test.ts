// Issue 40: a run stopped by a limit says which limit and its value. Here the file-size limit
// (prlimit --fsize, SIGXFSZ; through bwrap it arrives as exit 153), jailed and unjailed.
import { beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { examples, read } from '../helpers.js';
import { loadDesign } from '../../src/core/run/design.js';
import { VerilatorSimulator } from '../../src/core/sim/verilator/backend.js';
import type { DesignInfo, DesignSpec } from '../../src/core/design/types.js';

const weak = read(join(examples, 'counter', 'tb_counter_weak.sv'));
let design: DesignSpec;
let info: DesignInfo;

beforeAll(async () => {
  ({ design, info } = await loadDesign({ files: [join(examples, 'counter', 'counter.sv')], top: 'counter' }));
}, 60_000);

describe(`limits named (${process.env.CHORUS_NO_JAIL === '1' ? 'no jail' : 'jailed'})`, () => {
  it('a testbench that writes past the file-size limit is told the limit and its value', async () => {
    const tb = weak.replace(
      /endmodule\s*$/,
      '  integer fd;\n  initial begin\n    fd = $fopen("big.txt", "w");\n    repeat (4096) $fwrite(fd, "0123456789abcdef0123456789abcdef\\n");\n    $fclose(fd);\n  end\nendmodule\n',
    );
    const r = await new VerilatorSimulator().simulate({
      design,
      top: info.top,
      testbench: { name: 'tb.sv', content: tb },
      limits: { outputLimitBytes: 64 * 1024 },
    });
    expect(r.status).toBe('xrun_failed');
    expect(r.err_msg).toMatch(/file-size limit of 65536 bytes/);
    expect(r.diagnostics.map((d) => d.code)).toContain('CHORUS-OUTPUT');
  }, 120_000);
});
