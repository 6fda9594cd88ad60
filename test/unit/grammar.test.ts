// The contributed Verilog/SystemVerilog grammar, tokenized by VS Code's own TextMate engine
// (vscode-textmate + the Oniguruma regex library), on the kind of code engineers open.
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import vsctm from 'vscode-textmate';
import oniguruma from 'vscode-oniguruma';
import { examples, repoRoot } from '../helpers.js';

const require = createRequire(import.meta.url);
const syntaxes = join(repoRoot, 'syntaxes');
let registry: vsctm.Registry;

beforeAll(async () => {
  const wasm = readFileSync(join(require.resolve('vscode-oniguruma'), '..', 'onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (p: string[]) => new oniguruma.OnigScanner(p),
      createOnigString: (s: string) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scope: string) => {
      const file = { 'source.systemverilog': 'systemverilog.tmLanguage.json', 'source.verilog': 'verilog.tmLanguage.json' }[scope];
      return file ? vsctm.parseRawGrammar(readFileSync(join(syntaxes, file), 'utf8'), join(syntaxes, file)) : null;
    },
  });
});

/** Every token of `text` as [text, innermost scope]. */
async function tokens(text: string, scope = 'source.systemverilog'): Promise<Array<[string, string]>> {
  const g = await registry.loadGrammar(scope);
  if (!g) throw new Error(`grammar ${scope} did not load`);
  let state = vsctm.INITIAL;
  const out: Array<[string, string]> = [];
  for (const line of text.split('\n')) {
    const r = g.tokenizeLine(line, state);
    for (const t of r.tokens) out.push([line.slice(t.startIndex, t.endIndex), t.scopes[t.scopes.length - 1]]);
    state = r.ruleStack;
  }
  return out;
}
const scopeOf = (ts: Array<[string, string]>, text: string): string | undefined => ts.find(([t]) => t === text)?.[1];

describe('SystemVerilog grammar', () => {
  it('scopes the constructs of a clocked design', async () => {
    const ts = await tokens(
      [
        '`timescale 1ns/1ps',
        '`include "defs.svh"',
        'module counter #(parameter int W = 8) (input logic clk, output logic [W-1:0] q); // up counter',
        '  always_ff @(posedge clk) begin',
        "    if (q == 8'hFF) q <= '0; /* wrap */",
        '    else q <= q + 1;',
        '  end',
        '  initial $display("q=%0d\\n", q);',
        '  function automatic int twice(int x); return 2 * x; endfunction',
        '  initial #10ns `MY_MACRO(q);',
        'endmodule',
      ].join('\n'),
    );
    expect(scopeOf(ts, '`timescale')).toBe('keyword.control.directive.systemverilog');
    expect(scopeOf(ts, '`include')).toBe('keyword.control.directive.include.systemverilog');
    expect(scopeOf(ts, '"defs.svh"')).toBe('string.quoted.other.include.systemverilog');
    expect(scopeOf(ts, 'module')).toBe('storage.type.module.systemverilog');
    expect(scopeOf(ts, 'counter')).toBe('entity.name.type.systemverilog');
    expect(scopeOf(ts, 'logic')).toBe('storage.type.systemverilog');
    expect(scopeOf(ts, 'input')).toBe('storage.modifier.systemverilog');
    expect(scopeOf(ts, ' up counter')).toBe('comment.line.double-slash.systemverilog');
    expect(scopeOf(ts, 'always_ff')).toBe('keyword.other.process.systemverilog');
    expect(scopeOf(ts, 'posedge')).toBe('keyword.other.process.systemverilog');
    expect(scopeOf(ts, 'begin')).toBe('keyword.control.systemverilog');
    expect(scopeOf(ts, "8'hFF")).toBe('constant.numeric.based.systemverilog');
    expect(scopeOf(ts, "'0")).toBe('constant.numeric.unbased.systemverilog');
    expect(scopeOf(ts, ' wrap ')).toBe('comment.block.systemverilog');
    expect(scopeOf(ts, '$display')).toBe('support.function.system.systemverilog');
    expect(scopeOf(ts, '%0d')).toBe('constant.other.placeholder.systemverilog');
    expect(scopeOf(ts, '\\n')).toBe('constant.character.escape.systemverilog');
    expect(scopeOf(ts, 'twice')).toBe('entity.name.function.systemverilog');
    expect(scopeOf(ts, '10ns')).toBe('constant.numeric.time.systemverilog');
    expect(scopeOf(ts, '`MY_MACRO')).toBe('entity.name.function.macro.systemverilog');
    expect(scopeOf(ts, 'endmodule')).toBe('storage.type.end.systemverilog');
  });

  it('a block comment spans lines and hides keywords inside it', async () => {
    const ts = await tokens('/* module fake;\n   always begin */ wire w;');
    expect(
      ts
        .filter(([, s]) => s.startsWith('comment'))
        .map(([t]) => t)
        .join(''),
    ).toContain('always begin');
    expect(scopeOf(ts, 'wire')).toBe('storage.type.systemverilog');
    expect(ts.some(([t, s]) => t === 'module' && !s.startsWith('comment'))).toBe(false);
  });

  it('.v files use the same rules through the Verilog grammar', async () => {
    const ts = await tokens('module m(input a, output reg y); always @(*) y = ~a; endmodule', 'source.verilog');
    expect(scopeOf(ts, 'module')).toBe('storage.type.module.systemverilog');
    expect(scopeOf(ts, 'reg')).toBe('storage.type.systemverilog');
  });

  it('every example design tokenizes without an unscoped keyword', async () => {
    const files = ['fsm/seq_detector.sv', 'counter/counter.sv'].map((f) => join(examples, f));
    for (const f of files) {
      const ts = await tokens(readFileSync(f, 'utf8'));
      const bare = ts.filter(
        ([t, s]) => /^(module|endmodule|always_ff|always|begin|end|case|endcase)$/.test(t.trim()) && s === 'source.systemverilog',
      );
      expect(bare, f).toEqual([]);
    }
  });
});

describe('the contribution in package.json', () => {
  it('declares the verilog and systemverilog language ids (the ids popular HDL extensions use) with these grammars', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'));
    const ids = pkg.contributes.languages.map((l: { id: string }) => l.id);
    expect(ids).toEqual(expect.arrayContaining(['verilog', 'systemverilog']));
    for (const g of pkg.contributes.grammars) expect(() => readFileSync(join(repoRoot, g.path))).not.toThrow();
    const conf = JSON.parse(readFileSync(join(syntaxes, 'language-configuration.json'), 'utf8'));
    expect(conf.comments).toEqual({ lineComment: '//', blockComment: ['/*', '*/'] });
    expect(new RegExp(conf.indentationRules.decreaseIndentPattern).test('  endmodule')).toBe(true);
  });
});
