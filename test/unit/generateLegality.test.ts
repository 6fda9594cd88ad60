// The built-in generator's legality rules (from the design's assertions), clocks by use, bus
// registers loaded from write data, wide random values, operand and array patterns, resets after
// handshake timeouts and unreachable points: ports written by hand, the design's checks from the
// slang front end, no simulator.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { scratchDir } from '../helpers.js';
import type { DesignInfo, ModuleInfo, PortInfo } from '../../src/core/design/types.js';
import type { SimResult } from '../../src/core/sim/result.js';
import { assignRoles } from '../../src/core/generate/roles.js';
import type { DesignFacts } from '../../src/core/design/facts.js';
import { designFacts } from '../../src/core/sim/slang/frontEnd.js';
import { emptyDesign } from '../../src/core/design/types.js';
import { dutFailures, illegalCount, legalityRules, ruleFor } from '../../src/core/generate/legality.js';
import { betterRound, reachableUncovered } from '../../src/core/generate/generator.js';
import { emitTestbench, type StimulusPlan } from '../../src/core/generate/emit.js';
import { emitProtocols } from '../../src/core/generate/protocols/emit.js';
import { detectProtocols, writeRegisters, type HandshakePlan } from '../../src/core/generate/protocols/detect.js';
import { cornerValues, randomExpr } from '../../src/core/generate/values.js';

const root = join(__dirname, '..', '..');
const port = (name: string, direction: PortInfo['direction'] = 'input', width = 1, unpacked: Array<[number, number]> = []): PortInfo => ({
  name,
  direction,
  width,
  packedDims: width > 1 ? [[width - 1, 0]] : [],
  unpackedDims: unpacked,
  signed: false,
  typeName: 'logic',
  kind: 'basic',
  line: 1,
});
const mod = (ports: PortInfo[], o: Partial<ModuleInfo> = {}): ModuleInfo => ({
  name: 'dut',
  file: 'dut.sv',
  line: 1,
  ports,
  params: [],
  instantiates: [],
  edges: { clk: ['pos'] },
  comparisons: {},
  ...o,
});
const infoOf = (m: ModuleInfo, files: string[] = []): DesignInfo => ({
  top: m.name,
  topCandidates: [m.name],
  modules: [m],
  files,
  warnings: [],
});

/** A successful run with the given coverage and DUT assertion failures. */
const run = (
  overall: number,
  fails: Array<{ file: string; line: number; kind?: string; message?: string }> = [],
  o: Partial<SimResult> = {},
): SimResult =>
  ({
    status: 'success',
    coverage: { waived: { overall } },
    uncovered: [],
    diagnostics: [],
    dutAssertions: fails.map((f) => ({ kind: 'assertion', message: 'x', count: 3, firstTime: '1', lastTime: '2', ...f })),
    ...o,
  }) as unknown as SimResult;

const fifoPorts = [
  port('clk'),
  port('rst_n'),
  port('push'),
  port('wdata', 'input', 8),
  port('pop'),
  port('rdata', 'output', 8),
  port('full', 'output'),
  port('empty', 'output'),
];

describe('DUT assertion failures', () => {
  it('prefer dutAssertions, fall back to run-stage DUT error diagnostics (one entry per site)', () => {
    expect(dutFailures(run(1, [{ file: 'a.sv', line: 4 }]))).toMatchObject([{ file: 'a.sv', line: 4, count: 3 }]);
    const diag = (line: number, origin: 'dut' | 'testbench' = 'dut', code = 'ASSERT') => ({
      file: 'f.sv',
      origin,
      line,
      column: 1,
      severity: 'error' as const,
      code,
      message: 'Assertion failed',
      stage: 'run' as const,
    });
    const r = run(1, [], {
      dutAssertions: undefined,
      diagnostics: [diag(7), diag(7), diag(9), diag(3, 'testbench'), diag(5, 'dut', 'CHORUS-COMBLOOP')],
    });
    expect(dutFailures(r).map((f) => `${f.line}:${f.count}`)).toEqual(['7:2', '9:1']);
    expect(illegalCount(r)).toBe(3);
    expect(illegalCount(run(1))).toBe(0);
  });
});

describe("legality rules from the front end's facts", () => {
  const fifo = join(root, 'examples', 'fifo', 'sync_fifo.sv');
  const m = mod(fifoPorts, { edges: { clk: ['pos'], rst_n: ['neg'] } });
  const roles = assignRoles(m);
  /** The design's checks as the slang front end elaborates them (no simulator). */
  const withFacts = async (mm: ModuleInfo, files: string[]): Promise<DesignInfo> => ({
    ...infoOf(mm, files),
    facts: await designFacts({ ...emptyDesign(), files, top: mm.name }, { top: mm.name }),
  });

  it('immediate assertion `assert (!(push && full))`: push gated on full; pop-while-empty likewise', async () => {
    const info = await withFacts({ ...m, name: 'sync_fifo' }, [fifo]);
    const push = ruleFor({ file: fifo, line: 44, kind: 'assertion', message: 'push while full', count: 1 }, info, roles);
    expect(push).toMatchObject({ level: 'gate', statements: ["if (rst_n && full && push) begin push = '0; end"] });
    const pop = ruleFor({ file: fifo, line: 45, kind: 'assertion', message: 'pop while empty', count: 1 }, info, roles);
    expect(pop.statements).toEqual(["if (rst_n && empty && pop) begin pop = '0; end"]);
  });

  it('concurrent assertion `take |-> !dry` (status names no regex knows)', async () => {
    const f = join(root, 'test', 'fixtures', 'designs', 'legality', 'token_bucket.sv');
    const tm = mod(
      [port('clk'), port('rst_n'), port('take'), port('refill', 'input', 4), port('dry', 'output'), port('tokens', 'output', 4)],
      { name: 'token_bucket' },
    );
    const r = ruleFor(
      { file: f, line: 17, kind: 'assertion', message: 'take while dry', count: 1 },
      await withFacts(tm, [f]),
      assignRoles(tm),
    );
    expect(r).toMatchObject({ level: 'gate', statements: ["if (dry && take) begin take = '0; end"] });
  });

  it('a guarded assertion, and `if (...) $error` over two lines: the conditions they sit under are the antecedent', async () => {
    const dir = scratchDir('legal-');
    const f = join(dir, 'g.sv');
    writeFileSync(
      f,
      [
        'module g(input clk, rst_n, req, grant_busy, input [3:0] n, output logic ovf);',
        '  always @(posedge clk) if (rst_n) assert (!req || !grant_busy);',
        "  always @(posedge clk) if ((n == 4'hf) && req)",
        '    $error("request at the limit");',
        'endmodule',
      ].join('\n'),
    );
    const gm = mod([port('clk'), port('rst_n'), port('req'), port('grant_busy', 'output'), port('n', 'input', 4), port('ovf', 'output')], {
      name: 'g',
      edges: { clk: ['pos'] },
    });
    const gr = assignRoles(gm);
    const info = await withFacts(gm, [f]);
    // The guard `rst_n` joins the antecedent: req is dropped while the design is out of reset and busy.
    expect(ruleFor({ file: f, line: 2, kind: 'assertion', message: '', count: 1 }, info, gr).statements).toEqual([
      "if (rst_n && grant_busy && req) begin req = '0; end",
    ]);
    expect(ruleFor({ file: f, line: 4, kind: 'error', message: '', count: 1 }, info, gr).statements).toEqual([
      "if (req && (n == 4'd15)) begin if (n == 4'd15) n = n + 1'b1; end",
    ]);
  });

  it('`default: $error(...)` in a case on an input: the selector takes only the case items', async () => {
    const dir = scratchDir('legal-');
    const f = join(dir, 'd.sv');
    writeFileSync(
      f,
      [
        'module d(input clk, input [2:0] cmd, output logic [3:0] y);',
        '  always_ff @(posedge clk)',
        '    case (cmd)',
        "      3'd1: y <= 4'd1;",
        "      3'd4, 3'd5: y <= 4'd2;",
        '      default: $error("bad command");',
        '    endcase',
        'endmodule',
      ].join('\n'),
    );
    const dm = mod([port('clk'), port('cmd', 'input', 3), port('y', 'output', 4)], { name: 'd' });
    const r = ruleFor({ file: f, line: 6, kind: 'error', message: '', count: 1 }, await withFacts(dm, [f]), assignRoles(dm));
    expect(r.level).toBe('gate');
    expect(r.statements).toEqual(["if (!((cmd == 3'd4)) && !((cmd == 3'd5)) && !((cmd == 3'd1))) begin cmd = 3'd1; end"]);
  });

  it('`unique case` on an input: the selector takes only its case items', async () => {
    const f = join(root, 'test', 'fixtures', 'designs', 'legality', 'ucase_alu.sv');
    const um = mod(
      [port('clk'), port('rst_n'), port('op', 'input', 2), port('a', 'input', 8), port('b', 'input', 8), port('y', 'output', 8)],
      { name: 'ucase_alu' },
    );
    const r = ruleFor({ file: f, line: 14, kind: 'unique', message: 'unique case', count: 1 }, await withFacts(um, [f]), assignRoles(um));
    expect(r.level).toBe('gate');
    expect(r.statements[0]).toMatch(
      /^if \(rst_n && !\(\(op == 2'd\d\)\) && !\(\(op == 2'd\d\)\) && !\(\(op == 2'd\d\)\)\) begin op = 2'd0; end$/,
    );
  });

  it('an ineffective rule escalates: spacing the inputs the property names, then holding them, and then stays', async () => {
    const f = join(root, 'test', 'fixtures', 'designs', 'legality', 'token_bucket.sv');
    const tm = mod(
      [port('clk'), port('rst_n'), port('take'), port('refill', 'input', 4), port('dry', 'output'), port('tokens', 'output', 4)],
      { name: 'token_bucket' },
    );
    const roles2 = assignRoles(tm);
    const info = await withFacts(tm, [f]);
    const fail = { file: f, line: 17 };
    const first = legalityRules(run(1, [fail]), info, roles2);
    expect(first.map((r) => r.level)).toEqual(['gate']);
    // Then take is spaced out (the state the property reads may drain between takes), further
    // apart, and at last held at 0.
    const second = legalityRules(run(1, [fail]), info, roles2, first);
    expect(second.map((r) => [r.level, r.spacing])).toEqual([['space', 4]]);
    expect(second[0].statements).toContain("if (chorus_quiet_token_bucket_sv_17_4 < 4) begin take = '0; end");
    expect(second[0].declarations).toContain(
      "always @(posedge clk) chorus_quiet_token_bucket_sv_17_4 <= (take != '0) ? 0 : (chorus_quiet_token_bucket_sv_17_4 < 4 ? chorus_quiet_token_bucket_sv_17_4 + 1 : 4);",
    );
    const third = legalityRules(run(1, [fail]), info, roles2, second);
    expect(third.map((r) => [r.level, r.spacing])).toEqual([['space', 16]]);
    const fourth = legalityRules(run(1, [fail]), info, roles2, third);
    expect(fourth.map((r) => r.level)).toEqual(['freeze']);
    expect(fourth[0].statements).toContain("take = '0;");
    // Another round with the same failure changes nothing more (never loops).
    expect(legalityRules(run(1, [fail]), info, roles2, fourth)).toEqual(fourth);
  });

  it('a property over internal state alone is kept through the inputs its signals depend on, spaced then held', async () => {
    const f = join(scratchDir('legal-'), 's.sv');
    writeFileSync(
      f,
      [
        'module s(input logic clk, rst_n, start, input logic [1:0] cfg, input logic [7:0] data, output logic [7:0] q);',
        '  logic [1:0] mode_q;',
        '  logic busy_q;',
        '  always_ff @(posedge clk) if (!rst_n) begin mode_q <= 0; busy_q <= 0; end',
        '    else begin busy_q <= start; if (start) mode_q <= cfg; end',
        '  always_ff @(posedge clk) q <= data;',
        '  assert property (@(posedge clk) disable iff (!rst_n) busy_q |-> mode_q != 0);',
        "  assert property (@(posedge clk) disable iff (!rst_n) !(start && cfg == 2'd3));",
        '  logic bound;  // what a binding environment would drive',
        "  always @(posedge clk) assert (bound === 1'b1);",
        'endmodule',
      ].join('\n'),
    );
    const sm = mod([port('clk'), port('rst_n'), port('start'), port('cfg', 'input', 2), port('data', 'input', 8), port('q', 'output', 8)], {
      name: 's',
      edges: { clk: ['pos'] },
    });
    const sr = assignRoles(sm);
    const info = await withFacts(sm, [f]);
    const fail = { file: f, line: 7 };
    const first = legalityRules(run(1, [fail]), info, sr);
    // No input is named: start and cfg reach busy_q and mode_q; data reaches neither.
    expect(first.map((r) => [r.level, r.spacing])).toEqual([['space', 4]]);
    expect(first[0].statements).toEqual(["if (chorus_quiet_s_sv_7_4 < 4) begin start = '0; cfg = '0; end"]);
    expect(first[0].why).toMatch(/names no input/);
    const held = legalityRules(run(1, [fail]), info, sr, legalityRules(run(1, [fail]), info, sr, first));
    expect(held.map((r) => r.level)).toEqual(['freeze']);
    expect(held[0].statements.filter((x) => !x.startsWith('if'))).toEqual(["start = '0;", "cfg = '0;"]);
    // A check no input reaches holds nothing, and says that no stimulus can keep it.
    // While a check that names its inputs still fires, the one over internal state waits: holding
    // its whole cone would stop the design when the other rule alone may end both failures.
    const named = { file: f, line: 8 };
    const both = legalityRules(run(1, [fail, named]), info, sr);
    expect(both.map((r) => r.site)).toEqual(['s.sv:8']);
    expect(legalityRules(run(1, [fail, named]), info, sr, both).map((r) => [r.site, r.level])).toEqual([['s.sv:8', 'space']]);
    const unbound = ruleFor({ file: f, line: 10, kind: 'assertion', message: '', count: 1 }, info, sr);
    expect(unbound).toMatchObject({ level: 'freeze', statements: [] });
    expect(unbound.why).toMatch(/no data input reaches its signals, so no stimulus can keep it/);
  });

  it("the property's clock and what its disable iff reads are never held or spaced (that would silence the check)", async () => {
    const dir = scratchDir('legal-');
    const f = join(dir, 'c.sv');
    writeFileSync(
      f,
      [
        'module c(input logic clk, rst_n, input logic [1:0] a, b, output logic [1:0] y);',
        '  logic [1:0] we;',
        '  assign we = a & b;',
        '  assign y = we;',
        '  always_comb if (a[0]) assert ($onehot0(we));',
        '  assert property (@(posedge clk) disable iff (!rst_n) $onehot0(we));',
        'endmodule',
      ].join('\n'),
    );
    // A combinational design: nothing uses clk or rst_n but the check, so they are data inputs
    // like the others (as the roles from use give them for such a design).
    const cm = mod([port('clk'), port('rst_n'), port('a', 'input', 2), port('b', 'input', 2), port('y', 'output', 2)], {
      name: 'c',
      edges: {},
    });
    const base = assignRoles(cm);
    const cr = { ...base, clocks: [], resets: [], data: cm.ports.filter((p) => p.direction === 'input') };
    const info = await withFacts(cm, [f]);
    const r = ruleFor({ file: f, line: 6, kind: 'assertion', message: '', count: 1 }, info, cr, { level: 'space', spacing: 16 });
    expect(r.level).toBe('freeze');
    expect(r.statements).not.toContain("clk = '0;");
    expect(r.statements).not.toContain("rst_n = '0;");
  });

  it('look-alike: a site the front end has no check for holds nothing and says why; no failures give no rules', async () => {
    const none = ruleFor({ file: '/nonexistent/x.sv', line: 3, kind: 'assertion', message: '', count: 1 }, infoOf(m), roles);
    expect(none).toMatchObject({ level: 'freeze', statements: [] });
    expect(none.why).toMatch(/not read/);
    const info = await withFacts({ ...m, name: 'sync_fifo' }, [fifo]);
    expect(ruleFor({ file: fifo, line: 3, kind: 'assertion', message: '', count: 1 }, info, roles).why).toMatch(
      /no check at sync_fifo.sv:3/,
    );
    expect(legalityRules(run(1), info, roles)).toEqual([]);
  });

  it('the testbench applies the rules in every step, before the design sees the inputs and again before the edge', () => {
    const plan = {
      top: 'dut',
      instance: 'uut',
      params: {},
      roles,
      seed: 1,
      randomCycles: 10,
      holdCycles: 10,
      holdCombos: 1,
      midRunResets: 0,
      constants: {},
      respectFlags: false,
      exhaustiveBits: 16,
      round: 1,
      notes: [],
      legality: [{ site: 'f.sv:1', level: 'gate', statements: ["if (full) push = 1'b0;"], why: 'w' }],
    } satisfies StimulusPlan;
    const tb = emitTestbench(plan);
    expect(tb).toMatch(
      /task automatic step\(\);\n(.*\n)*?\s+if \(full\) push = 1'b0;\n\s+#1;\n\s+if \(full\) push = 1'b0;\n\s+@\(negedge clk\);/,
    );
    expect(emitTestbench({ ...plan, legality: [] })).not.toMatch(/Legal stimulus only/);
    // Inputs hold their first values from time 0: data at 0, the reset asserted.
    expect(tb).toMatch(/logic push = '0;/);
    expect(tb).toMatch(/logic rst_n = 1'b0;/);
    // A design with checks: the data inputs rest during a reset and on the edge after it.
    const task = (t: string): string => /task automatic apply_reset[\s\S]*?endtask/.exec(t)![0];
    expect(task(emitTestbench({ ...plan, idleAroundReset: true }))).toMatch(
      /rst_n = 1'b0;\n\s+push = '0;[\s\S]*repeat \(cycles\) step\(\);[\s\S]*rst_n = 1'b1;\n\s+step\(\);\n\s+endtask/,
    );
    expect(task(tb)).not.toMatch(/push = '0;|rst_n = 1'b1;\n\s+step\(\);/);
  });
});

describe('best round: legal stimulus first', () => {
  const bad = run(1, [{ file: 'f.sv', line: 1 }]);
  it('an illegal round never wins over a legal one, however much higher its coverage', () => {
    expect(betterRound(run(0.99), bad, 1)).toBe(true);
    expect(betterRound(bad, run(0.99), 1)).toBe(false);
    expect(betterRound(bad, run(0.1), 1)).toBe(false);
    expect(betterRound(run(0.1), bad, 1)).toBe(true);
  });
  it('look-alike: two legal rounds rank by coverage as before', () => {
    expect(betterRound(run(0.91), run(0.9), 1)).toBe(true);
    expect(betterRound(run(0.9), run(0.91), 1)).toBe(false);
  });
});

describe('proven-unreachable points', () => {
  it('are not aimed at; the others are', () => {
    const u = (line: number) => ({ type: 'line', file: '/d/x.sv', line, label: 'if', hier: 'u', count: 0 });
    const proven = (line: number, kind: string) => ({ ...u(line), reason: { kind, detail: 'x' } });
    const r = run(0.9, [], {
      uncovered: [
        proven(3, 'unreachable-formal'),
        u(5),
        proven(7, 'dead-param'),
        proven(9, 'witness'),
        proven(11, 'bounded'),
      ] as SimResult['uncovered'],
    });
    expect(reachableUncovered(r).map((x) => x.line)).toEqual([5, 9, 11]);
    expect(reachableUncovered(run(0.9, [], { uncovered: [u(3)] as SimResult['uncovered'] })).length).toBe(1);
  });
});

describe('clocks by use', () => {
  const facts = (clocks: DesignFacts['clocks'], resets: DesignFacts['resets'] = []): DesignFacts => ({
    slang: 'test',
    top: 'g',
    modules: [],
    clocks,
    resets,
    assertions: [],
    loads: [],
    includes: [],
    disagreements: [],
  });
  it('a clock-like name used as an enable is data; stimulus steps on the clock most blocks use', () => {
    const m = mod([port('aux_clk'), port('clk'), port('rst_n'), port('en_clk_x'), port('d', 'input', 8)], {
      edges: { aux_clk: ['pos'], clk: ['pos'], rst_n: ['neg'] },
    });
    const f = facts(
      [
        { signal: 'aux_clk', edge: 'pos', uses: 1 },
        { signal: 'clk', edge: 'pos', uses: 2 },
      ],
      [{ signal: 'rst_n', activeLow: true, async: true, uses: 1, evidence: 'e' }],
    );
    const r = assignRoles(m, [], f);
    expect(r.clocks.map((c) => c.port.name)).toEqual(['clk', 'aux_clk']);
    expect(r.clocks.map((c) => c.halfPeriodNs)).toEqual([5, 5]); // related in the first round
    expect(assignRoles(m, [], f, 1).clocks.map((c) => c.halfPeriodNs)).toEqual([5, 7]);
    expect(r.resets).toMatchObject([{ port: { name: 'rst_n' }, activeLow: true, async: true }]);
    expect(r.data.map((p) => p.name)).toEqual(['en_clk_x', 'd']);
  });
  it('look-alike: from use, a name decides nothing; without the facts, the netlist and names do', () => {
    const m = mod([port('clk_in'), port('rst'), port('d', 'input', 8)], { edges: {} });
    const r = assignRoles(m, [], facts([]));
    expect(r.clocks).toEqual([]);
    expect(r.resets).toEqual([]);
    expect(assignRoles(mod([port('clk'), port('en_clk_x')])).clocks.map((c) => c.port.name)).toEqual(['clk']);
    expect(assignRoles(mod([port('clk_in'), port('d', 'input', 8)], { edges: {} })).clocks.map((c) => c.port.name)).toEqual(['clk_in']);
  });
});

describe('bus registers loaded from write data', () => {
  const src = `module r (
    input logic clk, rst_n, we,
    input logic [7:0] addr,
    input logic [31:0] wdata,
    input logic [7:0] in_b,
    output logic [31:0] rdata
  );
    localparam logic [7:0] REG_A = 8'h10;
    logic [31:0] op_a, op_b, ctrl;
    logic [7:0] mode, other;
    always_ff @(posedge clk) if (we) begin
      case (addr)
        REG_A: op_a <= wdata;
        8'h14: op_b <= wdata;
        8'h18: mode <= wdata[7:0];
        default: ;
      endcase
    end
    always_ff @(posedge clk) if (addr == 8'h20 && we) ctrl <= wdata;
    always_ff @(posedge clk) other <= in_b;
    assign rdata = (mode == 8'h3 || mode == 8'h5) ? op_a + op_b : ctrl ^ {24'd0, other};
  endmodule`;
  const m = mod(
    [
      port('clk'),
      port('rst_n'),
      port('we'),
      port('addr', 'input', 8),
      port('wdata', 'input', 32),
      port('in_b', 'input', 8),
      port('rdata', 'output', 32),
    ],
    {
      name: 'r',
      params: [{ name: 'REG_A', value: "8'h10", isType: false, local: true }],
      comparisons: { addr: ["8'h10", "8'h14", "8'h18", "8'h20"], mode: ["8'h3", "8'h5"], other: ["8'h7"] },
    },
  );
  /** The design's loads as the slang front end elaborates them. */
  const info = async (): Promise<DesignInfo> => {
    const f = join(scratchDir('regs-'), 'r.sv');
    writeFileSync(f, src);
    return { ...infoOf(m, [f]), facts: await designFacts({ ...emptyDesign(), files: [f], top: 'r' }, { top: 'r' }) };
  };
  it('each register and its address, by case item (named too) or comparison; its constants go to that address', async () => {
    const i = await info();
    const regs = writeRegisters(i, ['addr'], 'wdata');
    expect([...regs.entries()]).toEqual([
      ['op_a', 0x10n],
      ['op_b', 0x14n],
      ['mode', 0x18n],
      ['ctrl', 0x20n],
    ]);
    const p = detectProtocols(i, assignRoles(m));
    expect(p.buses[0].regConstants).toEqual([{ reg: 'mode', addr: 0x18n, values: [3n, 5n] }]);
    expect(p.buses[0].operandAddrs).toEqual([0x10n, 0x14n, 0x20n]);
    const tb = emitProtocols(p, {}, 1).phases.join('\n');
    expect(tb).toMatch(
      /bus0_write\(8'h10, \$urandom\); bus0_write\(8'h14, \$urandom\); bus0_write\(8'h20, \$urandom\); bus0_write\(8'h18, 32'h3\); repeat \(16\) step\(\);/,
    );
  });
  it('look-alike: a register loaded from another input is neither an operand nor a mode; without the facts, none is known', async () => {
    const regs = writeRegisters(await info(), ['addr'], 'wdata');
    expect(regs.has('other')).toBe(false);
    expect(detectProtocols(infoOf(m), assignRoles(m)).buses[0].regConstants).toEqual([]);
  });
});

describe('values', () => {
  it('wide random values concatenate enough $urandom words for any width, in protocol tasks too', () => {
    expect(randomExpr(480)).toBe(`480'({${Array(15).fill('$urandom').join(', ')}})`);
    const h: HandshakePlan = {
      kind: 'handshake',
      style: 'start-done',
      start: port('start'),
      done: { port: port('done', 'output'), active: 1 },
      idleBefore: false,
      operands: [port('a', 'input', 480), port('b', 'input', 480)],
      timeout: 64,
    };
    const out = emitProtocols({ buses: [], handshakes: [h], serial: [], streams: [] }, {}, 1).phases.join('\n');
    expect(out).not.toMatch(/480'\(\$urandom\)/);
    expect(out).toMatch(/r0 = 480'\(\{\$urandom(, \$urandom){14}\}\)/);
    // Look-alike: narrow operands stay one word.
    const narrow = emitProtocols({ buses: [], handshakes: [{ ...h, operands: [port('a', 'input', 8)] }], serial: [], streams: [] }, {}, 1);
    expect(narrow.phases.join('\n')).toMatch(/hs0_run\(8'\(\$urandom\), /);
  });
  it('corners include the sign-safe all-ones; handshakes get equal operands', () => {
    expect(cornerValues(8)).toContain(0x7fn);
    expect(cornerValues(32)).toContain(0x7fffffffn);
    expect(cornerValues(1)).toEqual([0n, 1n]);
    const h: HandshakePlan = {
      kind: 'handshake',
      style: 'start-done',
      start: port('start'),
      done: { port: port('done', 'output'), active: 1 },
      idleBefore: false,
      operands: [port('a', 'input', 32), port('b', 'input', 32)],
      timeout: 64,
    };
    const out = emitProtocols({ buses: [], handshakes: [h], serial: [], streams: [] }, {}, 1).phases.join('\n');
    expect(out).toMatch(/hs0_run\(32'h7fffffff, 32'h7fffffff, 0\);/);
    expect(out).toMatch(/hs0_run\(32'h5555+, 32'h5555+, \d\);/);
  });
  it('a handshake wait that times out resets the design (when it has a reset) before going on', () => {
    const h: HandshakePlan = {
      kind: 'handshake',
      style: 'start-done',
      start: port('start'),
      done: { port: port('done', 'output'), active: 1 },
      idleBefore: true,
      operands: [port('a', 'input', 32)],
      timeout: 64,
    };
    const pp = { buses: [], handshakes: [h], serial: [], streams: [] };
    expect(emitProtocols(pp, {}, 1, true).tasks.join('\n')).toMatch(/if \(n >= 64\) begin start = 1'b0; apply_reset\(2\); end/);
    expect(emitProtocols(pp, {}, 1, false).tasks.join('\n')).not.toMatch(/apply_reset/);
  });
});

describe('array inputs', () => {
  it('get all-equal, ascending and descending arrangements; look-alike: packed vectors do not', () => {
    const m = mod([port('clk'), port('rst_n'), port('v', 'input', 8, [[0, 3]]), port('s', 'input', 8)], {
      edges: { clk: ['pos'], rst_n: ['neg'] },
    });
    const plan: StimulusPlan = {
      top: 'dut',
      instance: 'uut',
      params: {},
      roles: assignRoles(m),
      seed: 1,
      randomCycles: 10,
      holdCycles: 10,
      holdCombos: 1,
      midRunResets: 0,
      constants: {},
      respectFlags: false,
      exhaustiveBits: 16,
      round: 0,
      notes: [],
    };
    const tb = emitTestbench(plan);
    expect(tb).toMatch(/v_drv\[0\] = 8'h0; v_drv\[1\] = 8'h0; v_drv\[2\] = 8'h0; v_drv\[3\] = 8'h0;/);
    expect(tb).toMatch(/v_drv\[0\] = 8'\(0\); v_drv\[1\] = 8'\(1\); v_drv\[2\] = 8'\(2\); v_drv\[3\] = 8'\(3\);/);
    expect(tb).toMatch(/v_drv\[0\] = 8'\(3\); v_drv\[1\] = 8'\(2\); v_drv\[2\] = 8'\(1\); v_drv\[3\] = 8'\(0\);/);
    expect(tb).not.toMatch(/s\[0\] = /);
  });
});
