// The checkpoints' conversation format, byte for byte against fixtures recorded from the reference
// implementation (test/fixtures/protocol/README.md says where each came from).
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  OUTPUT_FORMAT_REQ,
  SYSTEM_PROMPT,
  classifyLog,
  contextText,
  defaultInstruction,
  extractFilename,
  extractTestbench,
  feedbackFromLog,
  feedbackTurn,
  firstTurn,
  parseReply,
  prioritizeErrors,
  replyFor,
  stripThink,
  userPrompt,
  type ChatMessage,
} from '../../src/core/agent/protocol.js';
import { designContext, testbenchName } from '../../src/core/agent/loop.js';
import type { SimResult } from '../../src/core/sim/result.js';
import { fixtures } from '../helpers.js';

const recorded = <T>(name: string): T => JSON.parse(readFileSync(join(fixtures, 'protocol', name), 'utf8')) as T;

describe('first turn (recorded from the reference)', () => {
  const counter = readFileSync(join(fixtures, 'protocol', 'counter.sv'), 'utf8');

  it('one RTL file, no spec: system prompt and user message byte for byte', () => {
    const ref = recorded<ChatMessage[]>('first-turn-one-file.json');
    const ours = firstTurn([{ name: 'counter.sv', content: counter }], [], defaultInstruction('counter', 'dut'));
    expect(ours).toEqual(ref);
    expect(SYSTEM_PROMPT).toBe(ref[0].content);
  });

  it('two RTL files and a spec file: files joined by a blank line, specs appended directly', () => {
    const alu = 'module alu(input [3:0] a, b, input op, output [3:0] y);\n  assign y = op ? a - b : a + b;\nendmodule\n';
    const ours = firstTurn(
      [
        { name: 'rtl/alu.sv', content: alu },
        { name: 'counter.sv', content: counter },
      ],
      [{ name: 'docs/spec.md', content: 'The ALU adds when op=0.\n' }],
      defaultInstruction('alu', 'uut'),
    );
    expect(ours).toEqual(recorded('first-turn-two-files-spec.json'));
    expect(userPrompt(contextText([{ name: 'a.sv', content: 'x' }]), 'i')).toContain('// File: a.sv\nx// No specification files provided.');
  });

  it('default instruction names the top and the instance', () => {
    const ref = recorded<{ top: string; instance: string; text: string }>('default-instruction.json');
    expect(defaultInstruction(ref.top, ref.instance)).toBe(ref.text);
    expect(firstTurn([{ name: 'c.sv', content: 'module c; endmodule' }], [], defaultInstruction('c'))[1].content).toContain(
      "instance name in the testbench should be 'uut'",
    );
  });
});

describe('parsing a reply (recorded from the reference)', () => {
  const cases = recorded<Record<string, { reply: string; testbench: string | null; filename: string | null }>>('parse-replies.json');
  for (const [name, c] of Object.entries(cases)) {
    it(name, () => {
      const r = parseReply(c.reply);
      if (name === 'python-fence-first') {
        // The one deliberate difference (README beside the fixtures): we skip non-SystemVerilog fences.
        expect(c.testbench).toBe('python\nprint(1)');
        expect(r).toEqual({ status: 'success', testbench: 'module tb; endmodule', filename: c.filename, source: 'fence' });
        return;
      }
      if (c.testbench === null) {
        expect(r.status).toBe('unparsable');
        expect(extractFilename(c.reply)).toBe(c.filename);
        return;
      }
      expect(r).toMatchObject({ status: 'success', testbench: c.testbench, filename: c.filename });
      expect(extractTestbench(stripThink(c.reply))?.code).toBe(c.testbench);
    });
  }
});

describe('parsing a reply', () => {
  it('strips <think> blocks, takes the first verilog/systemverilog/sv/untagged fence', () => {
    const r = parseReply(
      '<think>\nplan: toggle all\n</think>\nfilename: tb_counter.sv\n```python\nprint(1)\n```\n```SystemVerilog\nmodule tb; endmodule\n```\n```sv\nmodule other; endmodule\n```',
    );
    expect(r).toEqual({ status: 'success', testbench: 'module tb; endmodule', filename: 'tb_counter.sv', source: 'fence' });
    expect(stripThink('<think>a</think>  rest')).toBe('rest');
  });

  it('drops a reasoning block the length limit cut (no </think>) to the end of the reply', () => {
    const cut = '<think>\nfirst try:\n```sv\nmodule tb; endmodule\n```\nbut then';
    expect(stripThink(cut)).toBe('');
    expect(stripThink(`ok\n${cut}`)).toBe('ok');
    expect(parseReply(cut)).toMatchObject({ status: 'unparsable' });
    expect(stripThink('<think>a</think>b<think>c')).toBe('b');
  });

  it('falls back to module ... endmodule, and reports an unparsable reply instead of failing', () => {
    expect(parseReply('Here:\nmodule tb; initial $finish; endmodule\nthanks')).toMatchObject({
      status: 'success',
      testbench: 'module tb; initial $finish; endmodule',
      source: 'module',
      filename: null,
    });
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
  returncode: 0,
  status: 'success',
  err_msg: '',
  cov_info: null,
  reward: 0,
  stage: 'success',
  coverage: null,
  uncovered: [],
  diagnostics: [],
  timings: { total: 1 },
  simulator: { name: 'verilator', version: '5.006' },
  protection: {
    scratchDir: null,
    staticCheck: true,
    jail: 'none',
    reads: 'static',
    wallClockLimitS: 60,
    simTimeLimitNs: null,
    outputLimitBytes: 1,
    memoryLimitMb: null,
  },
  tbTop: 'tb',
  dutTop: 'dut',
  log: '',
  ...over,
});

describe('feedback turn', () => {
  for (const status of ['success', 'xrun_failed', 'imc_report_summary_failed'] as const) {
    it(`${status}: the one user message, byte for byte as the reference builds it`, () => {
      const ref = recorded<{ eda_result: { status: typeof status; err_msg: string; cov_info?: { detail: string } }; message: ChatMessage }>(
        `feedback-${status}.json`,
      );
      const r = ref.eda_result;
      const result = base({
        status: r.status,
        err_msg: r.err_msg,
        cov_info: r.cov_info ? { summary: [], detail: r.cov_info.detail, runtime_sec: 1 } : null,
      });
      expect(feedbackTurn({ status: 'success', testbench: 'm', filename: 'tb.sv', source: 'fence' }, result)).toBe(ref.message.content);
      expect(ref.message.content.endsWith('endmodule\n```')).toBe(true);
    });
  }

  it('compile failure: xrun stage with the error lines; coverage failure: imc stage', () => {
    const failed = base({
      status: 'xrun_failed',
      stage: 'lint',
      err_msg: 'tb.sv:7:43: PINNOTFOUND: Pin not found',
      diagnostics: [
        {
          file: 'tb.sv',
          origin: 'testbench',
          line: 7,
          column: 43,
          severity: 'error',
          code: 'PINNOTFOUND',
          message: "Pin not found: 'enn'",
          suggestion: 'en',
          stage: 'lint',
        },
      ],
    });
    const t = feedbackTurn({ status: 'success', testbench: 'm', filename: null, source: 'fence' }, failed);
    expect(t).toContain(
      "EDA result:\n- status: xrun_failed\n- stage: xrun\n- log: tb.sv:7:43: PINNOTFOUND: Pin not found: 'enn' (suggestion: en)",
    );
    expect(t).toContain('Instruction for next round:\nFix the xrun failure by editing the testbench.\nOUTPUT REQUIREMENTS:');
    const imc = feedbackTurn(
      { status: 'success', testbench: 'm', filename: null, source: 'fence' },
      base({ status: 'imc_report_summary_failed', err_msg: 'no DUT points' }),
    );
    expect(imc).toContain('- status: imc_report_summary_failed\n- stage: imc\n- log: no DUT points');
    expect(imc).toContain('Fix the coverage run failure (imc stage) by editing the testbench.');
  });

  it("the formal engine's witnesses: one more field, clocks left out, later cycles only what changes; none: byte-identical", () => {
    const formal = (frames: Array<Record<string, string>>): SimResult['formal'] => ({
      engine: 'e',
      ok: true,
      message: '',
      proven: 0,
      witnessed: 1,
      notProven: 0,
      seconds: { model: 0, pdr: 0 },
      budget: { designS: 20, pointS: 5 },
      assumptions: [],
      clocks: ['clk'],
      witnesses: [
        {
          file: '/rtl/lock.sv',
          line: 20,
          label: 'elsif',
          witness: {
            inputs: [
              ['clk', 1],
              ['rst_n', 1],
              ['key', 8],
            ],
            frames,
          },
        },
      ],
    });
    const cov = { summary: [], detail: 'coverage table', runtime_sec: 1 };
    const reply = { status: 'success', testbench: 'm', filename: 'tb.sv', source: 'fence' } as const;
    const t = feedbackTurn(
      reply,
      base({
        cov_info: cov,
        formal: formal([
          { clk: '0', rst_n: '0', key: '0' },
          { clk: '1', rst_n: '1', key: '5a' },
          { clk: '0', rst_n: '1', key: '5a' },
        ]),
      }),
    );
    expect(t).toContain(
      "- coverage: coverage table\n- formal_witnesses: a model checker found input sequences, one value per clock cycle from reset, that reach code no round covered: lock.sv:20 (elsif) is reached by cycle 0: rst_n=1'h0 key=8'h0, cycle 1: rst_n=1'h1 key=8'h5a, cycle 2: (same)\n\nInstruction for next round:",
    );
    // Without witnesses (or with only long ones) the turn is the reference's, byte for byte.
    const plain = feedbackTurn(reply, base({ cov_info: cov }));
    const long = feedbackTurn(reply, base({ cov_info: cov, formal: formal(Array.from({ length: 40 }, () => ({ rst_n: '1', key: '0' }))) }));
    expect(long).toBe(plain);
    expect(plain).not.toContain('formal_witnesses');
  });

  it('an unparsable reply gets the reference training wording, with the format reminder', () => {
    const t = feedbackTurn({ status: 'unparsable', reason: 'no code' }, null);
    expect(
      t.startsWith(
        'Response parse result:\n- status: success\n- type: file\n\nEDA result:\n- status: failed (could not extract a valid testbench from the response)\n\nInstruction for next round:\nFix the coverage run failure (imc stage) by editing the testbench.\n',
      ),
    ).toBe(true);
    expect(t.endsWith(OUTPUT_FORMAT_REQ.trim())).toBe(true);
  });
});

describe('feedback from a user-supplied log', () => {
  it('classifies Verilator, Xcelium and IMC logs and coverage reports', () => {
    expect(classifyLog("%Error: tb.sv:3:1: syntax error, unexpected 'endmodule'\n")).toBe('xrun');
    expect(classifyLog("xmvlog: *E,UNDIDN (tb.sv,12|4): 'foo': undeclared identifier.\n")).toBe('xrun');
    expect(classifyLog('imc: *E,NOCOV: no coverage database found for the merge\n')).toBe('imc');
    expect(classifyLog('Name  Overall Average  Block  Toggle\ncounter 90.83% 91.67% 90.00%\n')).toBe('coverage');
    expect(classifyLog('simulation finished at 1200 ns\n')).toBe('coverage');
  });

  it('puts error lines first and bounds the length', () => {
    const text = prioritizeErrors(
      ['note: compiling', 'warning: unused', '%Error: tb.sv:9: bad', 'note: done', '%Error: tb.sv:9: bad'],
      1000,
    );
    expect(text.split('\n')).toEqual(['%Error: tb.sv:9: bad', 'note: compiling', 'warning: unused', 'note: done']);
    const long = prioritizeErrors(
      Array.from({ length: 500 }, (_, i) => `%Error: line ${i}`),
      200,
    );
    expect(long.length).toBeLessThan(260);
    expect(long).toMatch(/more characters\]$/);
  });

  it('builds the same blocks as the engine feedback, with the instruction for the stage', () => {
    const f = feedbackFromLog('%Error: tb.sv:9:3: Cannot find module\n');
    expect(f).toBe(
      'Response parse result:\n- status: success\n- type: file\n\nEDA result:\n- status: xrun_failed\n- stage: xrun\n- log: %Error: tb.sv:9:3: Cannot find module\n\n' +
        'Instruction for next round:\nFix the xrun failure by editing the testbench.' +
        OUTPUT_FORMAT_REQ.trimEnd(),
    );
    expect(feedbackFromLog('Overall Average 50%', 'coverage')).toContain(
      '- stage: success\n- coverage: Overall Average 50%\n\nInstruction for next round:\nImprove coverage',
    );
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
