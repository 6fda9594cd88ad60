// The checkpoints' conversation format, checked against the contract in ../shared/docs/PROTOCOL.md.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  OUTPUT_FORMAT_REQ, SYSTEM_PROMPT, classifyLog, contextText, defaultInstruction, extractFilename, feedbackFromLog, feedbackTurn, firstTurn, parseReply,
  prioritizeErrors, replyFor, stripThink, userPrompt,
} from '../../src/core/agent/protocol.js';
import { designContext, testbenchName } from '../../src/core/agent/loop.js';
import type { SimResult } from '../../src/core/sim/result.js';
import { repoRoot } from '../helpers.js';

const protocol = readFileSync(join(repoRoot, '..', 'shared', 'docs', 'PROTOCOL.md'), 'utf8');

/** The indented block that follows `marker` in PROTOCOL.md, de-indented by `indent` spaces. */
function indentedBlock(marker: string, indent: number): string {
  const lines = protocol.split('\n');
  let i = lines.findIndex((l) => l.includes(marker)) + 1;
  while (lines[i].trim() === '') i++;
  const out: string[] = [];
  for (; i < lines.length; i++) {
    const l = lines[i];
    if (l.trim() !== '' && !l.startsWith(' '.repeat(indent))) break;
    out.push(l.slice(indent));
  }
  while (out.length && out[out.length - 1].trim() === '') out.pop();
  return out.join('\n');
}

describe('first turn', () => {
  it('system prompt is PROTOCOL.md §1 verbatim, with the leading and trailing newline', () => {
    expect(SYSTEM_PROMPT).toBe('\n' + indentedBlock('System message (verbatim', 4) + '\n');
  });

  it('user message follows the template, files joined by a blank line, specs appended directly', () => {
    const tpl = indentedBlock('User message template:', 4);
    const ctx = contextText([{ name: 'a.sv', content: 'module a; endmodule' }, { name: 'b.sv', content: 'module b; endmodule' }]);
    expect(ctx).toBe('// File: a.sv\nmodule a; endmodule\n\n// File: b.sv\nmodule b; endmodule// No specification files provided.');
    expect(userPrompt(ctx, 'do it')).toBe('\n' + tpl.replace('{context}', ctx).replace('{instructions}', 'do it') + '\n');
    const withSpec = contextText([{ name: 'a.sv', content: 'x' }], [{ name: 'spec.md', content: 'y' }]);
    expect(withSpec).toBe('// File: a.sv\nx// File: spec.md\ny');
  });

  it('default instruction names the top and the instance', () => {
    expect(defaultInstruction('counter', 'dut')).toBe(
      "Generate a SystemVerilog testbench for the given RTL design. The top module is 'counter', and its instance name in the testbench should be 'dut'. Target coverage only in your testbench: Try to achieve as high coverage as possible, including line, toggle, FSM, branch, etc. Also, don't include assertion statements in the testbench; they'll be handled separately.",
    );
    const m = firstTurn([{ name: 'c.sv', content: 'module c; endmodule' }], [], defaultInstruction('c'));
    expect(m.map((x) => x.role)).toEqual(['system', 'user']);
    expect(m[1].content).toContain("instance name in the testbench should be 'uut'");
  });
});

describe('parsing a reply', () => {
  it('strips <think> blocks, takes the first verilog/systemverilog/sv/untagged fence', () => {
    const r = parseReply('<think>\nplan: toggle all\n</think>\nfilename: tb_counter.sv\n```python\nprint(1)\n```\n```SystemVerilog\nmodule tb; endmodule\n```\n```sv\nmodule other; endmodule\n```');
    expect(r).toEqual({ status: 'success', testbench: 'module tb; endmodule', filename: 'tb_counter.sv', source: 'fence' });
    expect(stripThink('<think>a</think>  rest')).toBe('rest');
  });

  it('falls back to module ... endmodule, and reports an unparsable reply instead of failing', () => {
    expect(parseReply('Here:\nmodule tb; initial $finish; endmodule\nthanks')).toMatchObject({ status: 'success', testbench: 'module tb; initial $finish; endmodule', source: 'module', filename: null });
    expect(parseReply('I cannot help with that.')).toMatchObject({ status: 'unparsable' });
  });

  it('filename patterns in order; only the last path component is kept', () => {
    expect(extractFilename('filename: verif/tb_fifo.sv')).toBe('tb_fifo.sv');
    expect(extractFilename('File name = tb_top.sv')).toBe('tb_top.sv');
    expect(extractFilename('The output file is "tb_x.v"')).toBe('tb_x.v');
    expect(extractFilename('see tb_alone.sv below')).toBe('tb_alone.sv');
    expect(extractFilename('no name here')).toBeNull();
  });
});

const base = (over: Partial<SimResult>): SimResult => ({
  returncode: 0, status: 'success', err_msg: '', cov_info: null, reward: 0, stage: 'success', coverage: null, uncovered: [], diagnostics: [],
  timings: { total: 1 }, simulator: { name: 'verilator', version: '5.006' },
  protection: { scratchDir: null, staticCheck: true, jail: 'none', wallClockLimitS: 60, simTimeLimitNs: null, outputLimitBytes: 1, memoryLimitMb: null },
  tbTop: 'tb', dutTop: 'dut', log: '', ...over,
});

describe('feedback turn', () => {
  it('success: coverage report, improve instruction, OUTPUT_FORMAT_REQ appended directly', () => {
    const text = feedbackTurn({ status: 'success', testbench: 'm', filename: 'tb.sv', source: 'fence' }, base({ cov_info: { summary: [], detail: 'TABLE', runtime_sec: 1 } }));
    expect(text).toBe(
      'Response parse result:\n- status: success\n- type: file\n\nEDA result:\n- status: success\n- stage: success\n- coverage: TABLE\n\nInstruction for next round:\nImprove coverage toward 100% by editing the testbench.' + OUTPUT_FORMAT_REQ,
    );
    expect(OUTPUT_FORMAT_REQ).toBe('\n' + indentedBlock('OUTPUT_FORMAT_REQ is appended directly', 6).replace(/^\(blank line\)\n/, '') + '\n');
  });

  it('compile failure: xrun stage with the error lines; coverage failure: imc stage', () => {
    const failed = base({
      status: 'xrun_failed', stage: 'lint', err_msg: 'tb.sv:7:43: PINNOTFOUND: Pin not found',
      diagnostics: [{ file: 'tb.sv', origin: 'testbench', line: 7, column: 43, severity: 'error', code: 'PINNOTFOUND', message: "Pin not found: 'enn'", suggestion: 'en', stage: 'lint' }],
    });
    const t = feedbackTurn({ status: 'success', testbench: 'm', filename: null, source: 'fence' }, failed);
    expect(t).toContain("EDA result:\n- status: xrun_failed\n- stage: xrun\n- log: tb.sv:7:43: PINNOTFOUND: Pin not found: 'enn' (suggestion: en)");
    expect(t).toContain('Instruction for next round:\nFix the xrun failure by editing the testbench.\nOUTPUT REQUIREMENTS:');
    const imc = feedbackTurn({ status: 'success', testbench: 'm', filename: null, source: 'fence' }, base({ status: 'imc_report_summary_failed', err_msg: 'no DUT points' }));
    expect(imc).toContain('- status: imc_report_summary_failed\n- stage: imc\n- log: no DUT points');
    expect(imc).toContain('Fix the coverage run failure (imc stage) by editing the testbench.');
  });

  it('an unparsable reply is told so, with the format reminder', () => {
    const t = feedbackTurn({ status: 'unparsable', reason: 'no code' }, null);
    expect(t.startsWith('Response parse result:\n- status: failed\n- reason: no code\n\nInstruction for next round:\n')).toBe(true);
    expect(t.endsWith(OUTPUT_FORMAT_REQ)).toBe(true);
  });
});

describe('feedback from a user-supplied log', () => {
  it('classifies Verilator, Xcelium and IMC logs and coverage reports', () => {
    expect(classifyLog("%Error: tb.sv:3:1: syntax error, unexpected 'endmodule'\n")).toBe('xrun');
    expect(classifyLog('xmvlog: *E,UNDIDN (tb.sv,12|4): \'foo\': undeclared identifier.\n')).toBe('xrun');
    expect(classifyLog('imc: *E,NOCOV: no coverage database found for the merge\n')).toBe('imc');
    expect(classifyLog('Name  Overall Average  Block  Toggle\ncounter 90.83% 91.67% 90.00%\n')).toBe('coverage');
    expect(classifyLog('simulation finished at 1200 ns\n')).toBe('coverage');
  });

  it('puts error lines first and bounds the length', () => {
    const text = prioritizeErrors(['note: compiling', 'warning: unused', '%Error: tb.sv:9: bad', 'note: done', '%Error: tb.sv:9: bad'], 1000);
    expect(text.split('\n')).toEqual(['%Error: tb.sv:9: bad', 'note: compiling', 'warning: unused', 'note: done']);
    const long = prioritizeErrors(Array.from({ length: 500 }, (_, i) => `%Error: line ${i}`), 200);
    expect(long.length).toBeLessThan(260);
    expect(long).toMatch(/more characters\]$/);
  });

  it('builds the same blocks as the engine feedback, with the instruction for the stage', () => {
    const f = feedbackFromLog('%Error: tb.sv:9:3: Cannot find module\n');
    expect(f).toBe(
      'Response parse result:\n- status: success\n- type: file\n\nEDA result:\n- status: xrun_failed\n- stage: xrun\n- log: %Error: tb.sv:9:3: Cannot find module\n\n' +
        'Instruction for next round:\nFix the xrun failure by editing the testbench.' + OUTPUT_FORMAT_REQ,
    );
    expect(feedbackFromLog('Overall Average 50%', 'coverage')).toContain('- stage: success\n- coverage: Overall Average 50%\n\nInstruction for next round:\nImprove coverage');
    expect(feedbackFromLog('*E,IMC failed', 'imc')).toContain('- status: imc_report_summary_failed\n- stage: imc\n');
  });

  it('writes a user testbench back as a reply in the trained format, which parses back to itself', () => {
    const r = replyFor('module tb;\nendmodule\n', 'tb_x.sv');
    expect(r).toBe('filename: tb_x.sv\n```systemverilog\nmodule tb;\nendmodule\n```');
    expect(parseReply(r)).toEqual({ status: 'success', testbench: 'module tb;\nendmodule', filename: 'tb_x.sv', source: 'fence' });
  });
});

describe('design context and testbench names', () => {
  it('names files relative to their common folder, in compile order', () => {
    const d = { files: ['/p/rtl/pkg.sv', '/p/rtl/sub/alu.sv', '/p/top.sv'], libraryFiles: [], includeDirs: [], defines: {}, params: {} };
    expect(designContext(d, (p) => `// ${p}`).map((f) => f.name)).toEqual(['rtl/pkg.sv', 'rtl/sub/alu.sv', 'top.sv']);
    expect(designContext({ ...d, files: ['/p/rtl/a.sv'] }, () => '').map((f) => f.name)).toEqual(['a.sv']);
  });

  it('keeps a model-given file name only when it is a plain .sv/.v name', () => {
    expect(testbenchName('tb_alu.sv', 'alu')).toBe('tb_alu.sv');
    expect(testbenchName('../../etc/passwd', 'alu')).toBe('tb_alu.sv');
    expect(testbenchName('/tmp/x/tb.v', 'alu')).toBe('tb.v');
    expect(testbenchName('tb alu.sv', 'alu')).toBe('tb_alu.sv');
    expect(testbenchName(null, 'alu')).toBe('tb_alu.sv');
  });
});
