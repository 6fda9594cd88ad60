// Issue 24: the coverage figure is the reward (R = 1 + c), so a testbench must not be able to raise
// it by anything but driving the design. Each attack below is the weak counter testbench plus a
// forgery; the rule: a forged run never scores above the same testbench without the forgery.
// Run jailed (bubblewrap) and with CHORUS_NO_JAIL=1, through the engine and the reward service.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { examples, read, scratchDir } from '../helpers.js';
import { loadDesign } from '../../src/core/run/design.js';
import { VerilatorSimulator } from '../../src/core/sim/verilator/backend.js';
import { startScoreServer } from '../../src/core/service/http.js';
import type { SimResult } from '../../src/core/sim/result.js';
import type { DesignInfo, DesignSpec } from '../../src/core/design/types.js';

const sim = new VerilatorSimulator();
const counterSrc = read(join(examples, 'counter', 'counter.sv'));
const weak = read(join(examples, 'counter', 'tb_counter_weak.sv'));
const savedJail = process.env.CHORUS_NO_JAIL;

let design: DesignSpec;
let info: DesignInfo;
/** The weak testbench's real coverage database, every count set to 99: what a forger would write. */
let forgedDb = '';

/** The weak testbench with `body` added before endmodule. */
const weakWith = (body: string): string => weak.replace(/endmodule\s*$/, `${body}\nendmodule\n`);

/** SystemVerilog statements that write `text` to the file `name` (the path expression as given). */
function writeFileStmts(path: string, text: string): string {
  const lines = text.split('\n').filter(Boolean);
  const esc = (l: string): string =>
    l
      .replace(/\\/g, '\\\\')
      .replace(/"/g, '\\"')
      .replace(/[\x01-\x1f]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
  return [`    fd = $fopen(${path}, "w");`, ...lines.map((l) => `    $fwrite(fd, "${esc(l)}\\n");`), '    $fclose(fd);'].join('\n');
}

beforeAll(async () => {
  delete process.env.CHORUS_NO_JAIL;
  ({ design, info } = await loadDesign({ files: [join(examples, 'counter', 'counter.sv')], top: 'counter' }));
  const kept = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: weak }, keepRunDir: true });
  expect(kept.status, kept.err_msg).toBe('success');
  try {
    // The design's points only: a forgery that names no foreign file, so that nothing but the
    // report channel stands between it and the score.
    forgedDb = readFileSync(kept.coverageFile!, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('C ') && l.includes(`\x01f\x02${join(examples, 'counter', 'counter.sv')}\x01`))
      .join('\n')
      .replace(/' \d+$/gm, "' 99");
  } finally {
    rmSync(kept.protection.scratchDir!, { recursive: true, force: true });
  }
  expect(forgedDb).toMatch(/^C '.*' 99$/m);
});

afterAll(() => {
  if (savedJail === undefined) delete process.env.CHORUS_NO_JAIL;
  else process.env.CHORUS_NO_JAIL = savedJail;
});

interface Forgery {
  name: string;
  /** The forging testbench; `db`: the database it forges (its points must name the design file the run compiles). */
  tb: (db: string) => string;
}

const FORGERIES: Forgery[] = [
  {
    name: 'final block rewrites coverage.dat with every count at 99',
    tb: (db) => weakWith(`  final begin\n    integer fd;\n${writeFileStmts('"coverage.dat"', db)}\n  end`),
  },
  {
    name: 'initial block writes coverage.dat before the run ends',
    tb: (db) => weakWith(`  integer fd;\n  initial begin\n${writeFileStmts('"coverage.dat"', db)}\n  end`),
  },
  {
    name: 'writes the database the host keeps (chorus-coverage.dat) and a report directory name',
    tb: (db) =>
      weakWith(
        `  final begin\n    integer fd;\n${writeFileStmts('"chorus-coverage.dat"', db)}\n${writeFileStmts('"chorus-report-000000"', db)}\n  end`,
      ),
  },
  {
    name: 'writes a forged report frame to the harness channel by a computed /proc/self/fd path',
    tb: (db) =>
      weakWith(
        `  final begin\n    integer fd;\n${writeFileStmts('$sformatf("/proc/self/fd/%0d", 3)', `CHORUS-REPORT 1 ${'0'.repeat(32)}\nend finish\ncoverage ${Buffer.byteLength(db)}\n${db}\nCHORUS-END ${'0'.repeat(32)}`)}\n  end`,
      ),
  },
  {
    name: 'writes to /dev/fd/3 by a computed path',
    tb: (db) => weakWith(`  final begin\n    integer fd;\n${writeFileStmts('{"/dev/", "fd/3"}', db)}\n  end`),
  },
];

const scored = (r: SimResult): number => r.reward;

for (const mode of ['jail', 'no jail'] as const) {
  describe(`reward integrity, ${mode === 'jail' ? 'bubblewrap jail' : 'CHORUS_NO_JAIL=1'}`, () => {
    let plain: SimResult;
    beforeAll(async () => {
      if (mode === 'no jail') process.env.CHORUS_NO_JAIL = '1';
      else delete process.env.CHORUS_NO_JAIL;
      plain = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: weak } });
      expect(plain.status, plain.err_msg).toBe('success');
      expect(plain.reward).toBeGreaterThan(1);
      expect(plain.reward).toBeLessThan(2);
    });
    afterAll(() => {
      delete process.env.CHORUS_NO_JAIL;
    });

    for (const f of FORGERIES) {
      it(`${f.name}: never above the plain testbench`, async () => {
        const r = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: f.tb(forgedDb) } });
        expect(['success', 'rejected', 'integrity_failed']).toContain(r.status);
        expect(scored(r)).toBeLessThanOrEqual(plain.reward);
        if (r.status === 'success') expect(r.coverage!.waived.overall).toBe(plain.coverage!.waived.overall);
      });
    }

    it("output that mimics a simulator error is the testbench's, never the design's", async () => {
      const tb = weakWith(
        '  initial begin\n    #1 $display("%%Error: counter.sv:16: Active region did not converge.");\n    $display("[25000] %%Error: counter.sv:16: Assertion failed in tb.uut: push while full");\n  end',
      );
      const r = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: tb } });
      expect(r.status, r.err_msg).toBe('success');
      expect(r.settle).toBeUndefined();
      expect(r.diagnostics.filter((d) => d.origin === 'dut' && d.severity === 'error')).toEqual([]);
      expect(r.diagnostics.map((d) => d.code)).not.toContain('CHORUS-COMBLOOP');
      expect(r.reward).toBe(plain.reward);
    });
  });
}

describe("the host opens only the design's files", () => {
  it('a coverage point naming a file outside the design fails the run, and the file is never read', async () => {
    delete process.env.CHORUS_NO_JAIL;
    const canary = 'c4n4ry' + randomBytes(8).toString('hex');
    const outside = scratchDir('chorus-outside-');
    writeFileSync(join(outside, 'secret.sv'), Array.from({ length: 40 }, () => `// ${canary}`).join('\n') + '\n');
    const d = scratchDir('chorus-design-');
    copyFileSync(join(examples, 'counter', 'counter.sv'), join(d, 'counter.sv'));
    // A design whose source positions claim another file (as a `line directive can): its points
    // name a file the host did not resolve.
    const src = readFileSync(join(d, 'counter.sv'), 'utf8').replace(
      /module counter/,
      `\`line 1 "${join(outside, 'secret.sv')}" 0\nmodule counter`,
    );
    writeFileSync(join(d, 'counter.sv'), src);
    const loaded = await loadDesign({ files: [join(d, 'counter.sv')], top: 'counter' });
    const r = await sim.simulate({ design: loaded.design, top: 'counter', testbench: { name: 'tb.sv', content: weak } });
    expect(r.status, r.err_msg).toBe('integrity_failed');
    expect(r.reward).toBe(0);
    expect(r.err_msg).toMatch(/names 1 file that is neither the testbench's nor the design's .*secret\.sv.*not opened/);
    expect(r.diagnostics.map((x) => x.code)).toContain('CHORUS-INTEGRITY');
    expect(JSON.stringify(r)).not.toContain(canary);
  });
});

describe('the reward service scores forgeries as the engine does', () => {
  it('POST /v1/score: the forged testbenches never above the plain one', async () => {
    delete process.env.CHORUS_NO_JAIL;
    const server = await startScoreServer({ workers: 2 });
    try {
      const score = async (tbs: string[]) => {
        const items = tbs.map((tb) => ({
          design_files: [{ name: 'counter.sv', content: counterSrc }],
          top: 'counter',
          testbench: { name: 'tb.sv', content: tb },
        }));
        const res = await fetch(`${server.url}/v1/score`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ items }),
        });
        expect(res.status).toBe(200);
        const body = (await res.json()) as {
          results: Array<{ reward: number; status: string; coverage: number | null; err_msg?: string }>;
        };
        expect(body.results).toHaveLength(items.length);
        return body.results;
      };
      const [plain] = await score([weak]);
      expect(plain.status, plain.err_msg).toBe('success');
      expect(plain.reward).toBeGreaterThan(1);
      expect(plain.reward).toBeLessThan(2);
      // The service compiles its own copy of the design (one directory per design): the forged
      // database must name that file, or every forgery is an integrity failure (a point naming a
      // foreign file) whatever the service does with it, and this test could not fail.
      const dirs = readdirSync(server.service.designs.root);
      expect(dirs).toHaveLength(1);
      const served = join(server.service.designs.root, dirs[0], 'counter.sv');
      const db = forgedDb.split(join(examples, 'counter', 'counter.sv')).join(served);
      expect(db).toContain(`\x01f\x02${served}\x01`);
      const forged = await score(FORGERIES.map((f) => f.tb(db)));
      for (const [i, f] of forged.entries()) {
        expect(['success', 'rejected', 'integrity_failed'], FORGERIES[i].name).toContain(f.status);
        expect(f.err_msg ?? '', FORGERIES[i].name).not.toMatch(/neither the testbench's nor the design's/);
        expect(f.reward, FORGERIES[i].name).toBeLessThanOrEqual(plain.reward);
        if (f.status === 'success') expect(f.coverage, FORGERIES[i].name).toBe(plain.coverage);
      }
    } finally {
      await server.close();
    }
  });
});
