// Issue 40: a design that arrives in a request is as untrusted as a testbench. A design whose `$c`
// includes a host file, or whose `include names one, must not bring that file's text back through
// any output: the result (err_msg, diagnostics, log, build.fallbackReason), the cached DUT library,
// or the service's answer. Run jailed and with CHORUS_NO_JAIL=1, in the library and flat builds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir } from '../helpers.js';
import { VerilatorSimulator } from '../../src/core/sim/verilator/backend.js';
import { cacheRoot } from '../../src/core/util/cache.js';
import { emptyDesign } from '../../src/core/design/types.js';

const sim = new VerilatorSimulator();
const canary = `CHORUS_CANARY_${randomBytes(6).toString('hex')}`;
let dir: string;
let secret: string;

const TB = `module tb_leak;
  logic clk = 0, q;
  leak uut (.clk, .q);
  always #5 clk = ~clk;
  initial begin repeat (3) @(posedge clk); $finish; end
endmodule
`;

beforeAll(() => {
  dir = scratchDir('design-leaks');
  const outside = scratchDir('design-leaks-host');
  secret = join(outside, 'secret.txt');
  writeFileSync(secret, `${canary} = 1;\n${canary}_second_line\n`);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function design(name: string, body: string): string {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  const f = join(d, 'leak.sv');
  writeFileSync(f, `module leak(input logic clk, output logic q);\n${body}\n  assign q = clk;\nendmodule\n`);
  return f;
}

/** Every text the cache's DUT libraries hold (a reason is cached with an ineligible design). */
function cachedTexts(): string {
  const root = join(cacheRoot(), 'dut');
  let out = '';
  try {
    for (const e of readdirSync(root))
      for (const f of ['INELIGIBLE', 'READY']) {
        const p = join(root, e, f);
        try {
          if (statSync(p).isFile()) out += readFileSync(p, 'utf8');
        } catch {
          /* absent */
        }
      }
  } catch {
    /* no cache yet */
  }
  return out;
}

const CASES = [
  { name: "$c with a host file's #include", body: () => `  initial $c("\\n#include \\"${secret}\\"\\n");` },
  { name: '`include of a host path', body: () => `\`include "${secret}"` },
];

describe(`a design's host files (${process.env.CHORUS_NO_JAIL === '1' ? 'no jail' : 'jailed'})`, () => {
  for (const c of CASES)
    for (const build of ['dut-library', 'flat'] as const)
      it(`${c.name}, ${build} build: no output holds the file's text`, async () => {
        const f = design(`${build}-${c.name.length}`, c.body());
        const r = await sim.simulate({
          design: { ...emptyDesign(), files: [f] },
          top: 'leak',
          testbench: { name: 'tb_leak.sv', content: TB },
          build,
        });
        expect(r.status).not.toBe('success');
        expect(JSON.stringify(r)).not.toContain(canary);
        expect(cachedTexts()).not.toContain(canary);
      }, 120_000);
});
