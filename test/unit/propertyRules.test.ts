// Property structure to stimulus rules (generate/propertyRules.ts), one case per construct, on the
// facts the slang front end gives (design/facts.ts shapes, written out by hand here): what the
// testbench's step() does, and where no rule can come from the structure.
import { describe, expect, it } from 'vitest';
import { portInfo } from '../helpers.js';
import { propertyRule, propertyRules } from '../../src/core/generate/propertyRules.js';
import type { FactAssertion, FactExpr } from '../../src/core/design/facts.js';
import type { Roles } from '../../src/core/generate/roles.js';

const port = portInfo;
const clk = port('clk');
const rst = port('rst_n');
const roles: Roles = {
  clocks: [{ port: clk, halfPeriodNs: 5, activeEdge: 'pos' }],
  resets: [{ port: rst, activeLow: true, async: true }],
  data: [port('push'), port('valid'), port('data', 'input', 8), port('sel', 'input', 4), port('op', 'input', 2), port('start')],
  outputs: [port('full', 'output'), port('ready', 'output')],
};

const id = (name: string, top: string | null = name): FactExpr => ({ op: 'id', name, top });
const not = (e: FactExpr): FactExpr => ({ op: 'not', args: [e] });
const and = (...args: FactExpr[]): FactExpr => ({ op: 'and', args });
const call = (name: string, ...args: FactExpr[]): FactExpr => ({ op: 'call', name, args });

function prop(p: Partial<FactAssertion> & { consequentExpr: FactExpr }): FactAssertion {
  return {
    kind: 'concurrent',
    action: 'assert',
    file: '/d/ip.sv',
    line: 7,
    column: 3,
    module: 'ip',
    instance: 'ip',
    clock: { signal: 'clk', edge: 'pos' },
    disableIff: '!rst_n',
    antecedent: p.antecedentExpr ? 'a' : null,
    consequent: 'c',
    implication: p.antecedentExpr ? '|->' : null,
    delay: 0,
    usesPast: false,
    functions: [],
    signals: [],
    text: 'text',
    fromMacro: false,
    ...p,
  };
}

describe('property to stimulus rule', () => {
  it('a check of the starting state (initial block) gives no rule of every step; two instances of one check give one rule', () => {
    const c = prop({ kind: 'immediate', clock: null, consequentExpr: not(id('push')) });
    expect(propertyRule({ ...c, initial: true }, roles, 0)).toBeNull();
    expect(propertyRule(c, roles, 0)?.statements).toEqual(["push = '0;"]);
    expect(propertyRules([c, { ...c, instance: 'ip.u1' }], roles).map((r) => r.statements)).toEqual([["push = '0;"]]);
  });

  it('an antecedent conjunct the testbench cannot see (a formal past-valid flag) is dropped: the rule binds at least as often', () => {
    const guard = and(not(not(id('f_past_valid', null))), and(call('$past', and(id('valid'), not(id('ready')))), not(id('start'))));
    const r = propertyRule(prop({ kind: 'immediate', antecedentExpr: guard, consequentExpr: id('valid') }), roles, 0)!;
    expect(r.level).toBe('oblige');
    // ($past of an expression: of each signal in it.)
    expect(r.statements).toEqual(["if (((chorus_past_clk_valid && !(chorus_past_clk_ready)) && !(start))) begin valid = 1'b1; end"]);
    // Nothing the testbench can evaluate: no rule (never the consequent as if it always held).
    expect(
      propertyRule(prop({ kind: 'immediate', antecedentExpr: not(id('f_past_valid', null)), consequentExpr: not(id('valid')) }), roles, 0),
    ).toBeNull();
    // Under a negation a conjunct is not dropped: the whole antecedent is unusable.
    expect(
      propertyRule(prop({ antecedentExpr: not(and(id('f_past_valid', null), id('push'))), consequentExpr: id('valid') }), roles, 0),
    ).toBeNull();
  });

  it('|-> on an output (push |-> !full): the input is dropped while the output forbids it', () => {
    const r = propertyRule(prop({ antecedentExpr: id('push'), consequentExpr: not(id('full')) }), roles, 0);
    expect(r).toMatchObject({ level: 'gate', site: 'ip.sv:7', statements: ["if (full && push) begin push = '0; end"] });
  });

  it('`~x` of one bit is a negation (full |-> ~push): the input is met, not left to chance', () => {
    const w1 = (name: string): FactExpr => ({ op: 'id', name, top: name, width: 1 });
    const r = propertyRule(prop({ antecedentExpr: w1('full'), consequentExpr: { op: 'bitnot', args: [w1('push')] } }), roles, 0);
    expect(r).toMatchObject({ level: 'oblige', statements: ["if (full) begin push = '0; end"] });
  });

  it('|=> with $stable on inputs: a register remembers the antecedent, the inputs meet the consequent one edge later', () => {
    const r = propertyRule(
      prop({
        antecedentExpr: and(id('valid'), not(id('ready'))),
        consequentExpr: and(id('valid'), call('$stable', id('data'))),
        implication: '|=>',
        delay: 1,
      }),
      roles,
      3,
    )!;
    expect(r.level).toBe('oblige');
    expect(r.statements).toEqual(["if (chorus_ante_3[0]) begin valid = 1'b1; data = chorus_past_clk_data; end"]);
    expect(r.declarations).toEqual([
      "logic [0:0] chorus_ante_3 = '0;",
      'always @(posedge clk) chorus_ante_3 <= (valid && !(ready));',
      "logic [7:0] chorus_past_clk_data = '0;",
      'always @(posedge clk) chorus_past_clk_data <= data;',
    ]);
  });

  it('|-> ##2 on an input: a two-stage shift register', () => {
    const r = propertyRule(prop({ antecedentExpr: id('start'), consequentExpr: id('valid'), delay: 2 }), roles, 1)!;
    expect(r.statements).toEqual(["if (chorus_ante_1[1]) begin valid = 1'b1; end"]);
    expect(r.declarations[1]).toBe('always @(posedge clk) chorus_ante_1 <= {chorus_ante_1[0:0], start};');
  });

  it('$onehot0 and a forbidden encoding of inputs are met directly', () => {
    expect(propertyRule(prop({ consequentExpr: call('$onehot0', id('sel')) }), roles, 0)!.statements).toEqual([
      "sel = sel & (~sel + 1'b1);",
    ]);
    const ne: FactExpr = { op: 'ne', args: [id('op'), { op: 'const', value: "2'd3", width: 2 }] };
    expect(propertyRule(prop({ consequentExpr: ne }), roles, 0)!.statements).toEqual(["if (op == 2'd3) op = op + 1'b1;"]);
  });

  it('$onehot0 over a net its continuous assignments drive bit by bit: each part is cleared while one above it holds', () => {
    // {1'(push), 1'(start ? valid : push)}, as the front end reads `assign we[1] = push;
    // assign we[0] = start ? valid : push;`.
    const bit = (e: FactExpr): FactExpr => ({ op: 'cast', width: 1, args: [e] });
    const id1 = (name: string, top: string | null = name): FactExpr => ({ op: 'id', name, top, width: 1 });
    const we: FactExpr = {
      op: 'cast',
      width: 2,
      args: [{ op: 'concat', args: [bit(id1('push')), bit({ op: 'cond', args: [id1('start'), id1('valid'), id1('push')] })] }],
    };
    expect(propertyRule(prop({ consequentExpr: call('$onehot0', we) }), roles, 0)!.statements).toEqual([
      "if (1'(push)) begin if (start) begin valid = '0; end else begin push = '0; end end",
    ]);
    // A part that is not an input or a choice between inputs: no rule from the structure.
    const opaque: FactExpr = { op: 'cast', width: 2, args: [{ op: 'concat', args: [bit(id1('push')), bit(id1('internal', null))] }] };
    expect(propertyRule(prop({ consequentExpr: call('$onehot0', opaque) }), roles, 0)).toBeNull();
  });

  it('$past in the consequent on an input (start |-> !$past(start)): the start is dropped after one', () => {
    const r = propertyRule(prop({ antecedentExpr: id('start'), consequentExpr: not(call('$past', id('start'))) }), roles, 0)!;
    expect(r.level).toBe('gate');
    expect(r.statements).toEqual(["if (chorus_past_clk_start && start) begin start = '0; end"]);
    expect(r.declarations).toContain('always @(posedge clk) chorus_past_clk_start <= start;');
  });

  it('|=> on an output the design must produce: no rule until it fires; then the antecedent is avoided', () => {
    const p = prop({ antecedentExpr: id('push'), consequentExpr: id('ready'), implication: '|=>', delay: 1 });
    expect(propertyRule(p, roles, 0)).toBeNull();
    expect(propertyRule(p, roles, 0, true)).toMatchObject({ level: 'gate', statements: ["if (push) begin push = '0; end"] });
  });

  it('constant bits of packed ports (a generate loop over `valid[i]`, `sel[i]`): read, set and remembered as bits', () => {
    const bits = (name: string, text: string, width: number): FactExpr => ({ op: 'select', base: id(name), text, width });
    const k = (value: string, width = 32): FactExpr => ({ op: 'const', value, width });
    const inRange = propertyRule(
      prop({ antecedentExpr: bits('valid', '[0]', 1), consequentExpr: { op: 'lt', args: [bits('data', '[3:2]', 2), k("32'd3")] } }),
      roles,
      0,
    )!;
    // `valid` is 1 bit in these roles: [0] is its only bit.
    expect(inRange.statements).toEqual(["if (valid[0]) begin if (!(data[3:2] < 32'd3)) data[3:2] = data[3:2] % 32'd3; end"]);
    const held = propertyRule(
      prop({
        antecedentExpr: and(bits('data', '[0]', 1), not(bits('sel', '[1]', 1))),
        consequentExpr: call('$stable', { op: 'bitand', args: [bits('data', '[7:4]', 4), k("4'd9", 4)] }),
        implication: '|=>',
        delay: 1,
      }),
      roles,
      2,
    )!;
    expect(held.statements).toEqual(['if (chorus_ante_2[0]) begin data[7:4] = chorus_past_clk_data_7_4_; end']);
    expect(held.declarations).toContain("logic [3:0] chorus_past_clk_data_7_4_ = '0;");
    expect(held.declarations).toContain('always @(posedge clk) chorus_past_clk_data_7_4_ <= data[7:4];');
    // `x <= y` for a design-internal y: x at zero while the antecedent holds; `x < y`: no rule.
    const limit = id('max_step', null);
    expect(
      propertyRule(prop({ antecedentExpr: id('start'), consequentExpr: { op: 'le', args: [id('op'), limit] } }), roles, 0)!.statements,
    ).toEqual(["if (start) begin op = '0; end"]);
    expect(propertyRule(prop({ antecedentExpr: id('start'), consequentExpr: { op: 'lt', args: [id('op'), limit] } }), roles, 0)).toBeNull();
    // The same limit in a violation (`start && op > max_step`): op at zero while start holds.
    expect(
      propertyRule(prop({ consequentExpr: not(and(id('start'), { op: 'gt', args: [id('op'), limit] })) }), roles, 0)!.statements,
    ).toEqual(["if (start) begin op = '0; end"]);
    // Bits outside the port, and `x < 0` (nothing satisfies it): no rule from them.
    expect(propertyRule(prop({ consequentExpr: bits('data', '[8]', 1) }), roles, 0)).toBeNull();
    expect(propertyRule(prop({ consequentExpr: { op: 'lt', args: [id('op'), k("32'd0")] } }), roles, 0)).toBeNull();
  });

  it("an inlined 1-bit driver (`1'(push & ~valid)`) splits like `&&`; sums, concatenations and casts render as written", () => {
    const w1 = (name: string): FactExpr => ({ op: 'id', name, top: name, width: 1 });
    const w4 = (name: string): FactExpr => ({ op: 'id', name, top: name, width: 4 });
    const dec: FactExpr = { op: 'cast', width: 1, args: [{ op: 'bitand', args: [w1('push'), { op: 'bitnot', args: [w1('valid')] }] }] };
    const never = not(and(w1('full'), dec));
    expect(propertyRule(prop({ consequentExpr: never }), roles, 0)!.statements).toEqual([
      "if (full && !(valid) && push) begin push = '0; end",
    ]);
    const zero: FactExpr = { op: 'const', value: "1'd0", width: 1 };
    const sum: FactExpr = {
      op: 'gt',
      args: [
        {
          op: 'add',
          args: [
            { op: 'concat', args: [zero, w4('data')] },
            { op: 'cast', width: 5, args: [w4('sel')] },
          ],
        },
        { op: 'cond', args: [w1('ready'), { op: 'const', value: "5'd7", width: 5 }, { op: 'const', value: "5'd9", width: 5 }] },
      ],
    };
    expect(propertyRule(prop({ consequentExpr: not(and(w1('start'), sum)) }), roles, 0)!.statements).toEqual([
      "if ((({1'd0, data} + 5'(sel)) > (ready ? 5'd7 : 5'd9)) && start) begin start = '0; end",
    ]);
    // A 4-bit cast is not a truth value: it is compared, never split or flipped.
    const wide: FactExpr = { op: 'cast', width: 4, args: [{ op: 'bitand', args: [w4('data'), w4('sel')] }] };
    expect(propertyRule(prop({ consequentExpr: not(wide) }), roles, 0)).toBeNull();
  });

  it('a negated conjunction (`!(push && start)`) is avoided, never met by driving its parts; `!(op < K)` is `op >= K`', () => {
    const r = propertyRule(prop({ consequentExpr: not(and(id('push'), id('start'))) }), roles, 0)!;
    expect(r).toMatchObject({ level: 'gate', statements: ["if (start && push) begin push = '0; end"] });
    const k: FactExpr = { op: 'const', value: "2'd2", width: 2 };
    expect(propertyRule(prop({ consequentExpr: not({ op: 'lt', args: [id('op'), k] }) }), roles, 0)!.statements).toEqual([
      "if (!(op >= 2'd2)) op = 2'd2;",
    ]);
  });

  it('a disjunction is met only when none of its parts holds (random legal values are kept)', () => {
    const k: FactExpr = { op: 'const', value: "2'd1", width: 2 };
    const r = propertyRule(
      prop({ antecedentExpr: id('valid'), consequentExpr: { op: 'or', args: [{ op: 'eq', args: [id('op'), k] }, id('start')] } }),
      roles,
      0,
    )!;
    expect(r.statements).toEqual(["if (valid) begin if (!((op == 2'd1) || start)) begin op = 2'd1; end end"]);
  });

  it('$fell/$rose of a 1-bit input compare the input itself (a scalar takes no bit select); of a wider one, bit 0', () => {
    const r = propertyRule(prop({ antecedentExpr: call('$fell', id('start')), consequentExpr: not(id('push')) }), roles, 0)!;
    expect(r.statements).toEqual(["if ((!start && chorus_past_clk_start)) begin push = '0; end"]);
    const w = propertyRule(prop({ antecedentExpr: call('$rose', id('data')), consequentExpr: not(id('push')) }), roles, 0)!;
    expect(w.statements).toEqual(["if ((data[0] && !chorus_past_clk_data[0])) begin push = '0; end"]);
  });

  it('look-alikes: an internal signal, an opaque sequence, a cover: no rule', () => {
    expect(propertyRule(prop({ antecedentExpr: id('state_q', null), consequentExpr: not(id('full')) }), roles, 0)).toBeNull();
    expect(propertyRule(prop({ consequentExpr: { op: 'opaque', text: 'a [*3]' } }), roles, 0)).toBeNull();
    expect(propertyRule(prop({ action: 'cover', consequentExpr: id('valid') }), roles, 0)).toBeNull();
  });
});
