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
import { startScoreServer } from '../../src/core/service/http.js';
import { loadDesign } from '../../src/core/run/design.js';

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

describe(`reading a design (${process.env.CHORUS_NO_JAIL === '1' ? 'no jail' : 'jailed'})`, () => {
  it('a design that includes a host file fails to load without quoting it', async () => {
    const f = design('load', `\`include "${secret}"`);
    const err = await loadDesign({ files: [f], top: 'leak' }).then(
      () => null,
      (e: Error) => e,
    );
    expect(err).not.toBeNull();
    expect(`${err!.message} ${JSON.stringify(err)}`).not.toContain(canary);
  }, 120_000);
});

describe(`native code in the design (${process.env.CHORUS_NO_JAIL === '1' ? 'no jail' : 'jailed'})`, () => {
  const body = '  initial $c("/* native */");';

  it("the user's own design runs, with a CHORUS-NATIVE warning naming the construct", async () => {
    const r = await sim.simulate({
      design: { ...emptyDesign(), files: [design('own', body)] },
      top: 'leak',
      testbench: { name: 'tb_leak.sv', content: TB },
    });
    expect(r.status, r.err_msg).toBe('success');
    const d = r.diagnostics.find((x) => x.code === 'CHORUS-NATIVE')!;
    expect(d).toMatchObject({ severity: 'warning', origin: 'dut', line: 2 });
    expect(d.message).toMatch(/inline C\+\+/);
  }, 120_000);

  it('a design from a request is refused before anything is compiled, unless the service allows it', async () => {
    const refused = await sim.simulate({
      design: { ...emptyDesign(), files: [design('req', body)] },
      top: 'leak',
      testbench: { name: 'tb_leak.sv', content: TB },
      designNativeCode: 'refuse',
    });
    expect(refused.status).toBe('rejected');
    expect(refused.reward).toBe(0);
    expect(refused.diagnostics.find((x) => x.code === 'CHORUS-NATIVE')).toMatchObject({ severity: 'error', origin: 'dut' });
    const item = {
      design_files: [
        { name: 'leak.sv', content: `module leak(input logic clk, output logic q);\n${body}\n  assign q = clk;\nendmodule\n` },
      ],
      top: 'leak',
      testbench: { name: 'tb_leak.sv', content: TB },
    };
    for (const allow of [false, true]) {
      const server = await startScoreServer({ workers: 1, allowNativeDesign: allow });
      try {
        const res = await fetch(`${server.url}/v1/score`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ items: [item] }),
        });
        const got = (await res.json()) as { results: Array<{ status: string }> };
        expect(res.status).toBe(200);
        expect(got.results[0].status).toBe(allow ? 'success' : 'rejected');
      } finally {
        await server.close(0);
      }
    }
  }, 180_000);
});
