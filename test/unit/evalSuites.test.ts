// Suite adapters onto EvalTask: the real shared benchmark files, and small malformed fixtures.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { loadSuite, selectTasks, SuiteError, detectJsonlFormat } from '../../src/core/eval/suites/index.js';
import { chooseTop, cvdpCoverageTarget, instanceFromPrompt } from '../../src/core/eval/suites/cvdp.js';
import { fixtures, scratchDir, benchData } from '../helpers.js';

const ve = join(benchData, 'verilog-eval-v2');
const cvdpDir = join(benchData, 'cvdp-example');
const cvdpPlain = join(cvdpDir, 'cvdp_v1.1.0_example_nonagentic_code_generation_commercial.jsonl');
const cvdpSol = join(cvdpDir, 'cvdp_v1.1.0_example_nonagentic_code_generation_commercial_with_solutions.jsonl');
const cvdpAgentic = join(cvdpDir, 'cvdp_v1.1.0_example_agentic_code_generation_commercial.jsonl');
const fx = join(fixtures, 'eval');

describe('VerilogEval v2 folder', () => {
  it('156 tasks: RefModule, coverage target 100%, the prompt as spec, the human testbench as reference', () => {
    const s = loadSuite(ve, { workDir: scratchDir() });
    expect(s.format).toBe('verilog-eval');
    expect(s.tasks.length).toBe(156);
    expect(s.tasks.every((t) => !t.error && t.top === 'RefModule' && t.coverageTarget === 100 && t.instance === 'uut')).toBe(true);
    const t = s.tasks.find((x) => x.id === 'Prob010_mt2015_q4a')!;
    expect(t.designFiles.map((f) => basename(f))).toEqual(['Prob010_mt2015_q4a_ref.sv']);
    expect(t.specFiles.map((f) => basename(f))).toEqual(['Prob010_mt2015_q4a_prompt.txt']);
    expect(basename(t.reference!)).toBe('Prob010_mt2015_q4a_test.sv');
    // The testbench compares RefModule with TopModule: a renamed copy of the reference rides along.
    expect(t.referenceSuffix).toMatch(/module TopModule/);
    expect(t.referenceSuffix).not.toMatch(/module RefModule/);
    expect(t.instruction).toBeUndefined(); // the reference wording naming top and instance
  });

  it('--tasks by id or prefix, --limit after it', () => {
    const s = loadSuite(ve, { workDir: scratchDir() });
    expect(selectTasks(s.tasks, ['Prob001', 'Prob010_mt2015_q4a', 'Prob999']).map((t) => t.id)).toEqual([
      'Prob001_zero',
      'Prob010_mt2015_q4a',
    ]);
    expect(selectTasks(s.tasks, undefined, 3).map((t) => t.id)).toEqual(['Prob001_zero', 'Prob002_m2014_q4i', 'Prob003_step_one']);
  });

  it('a folder that is not a suite, or a folder with another format, is a suite error', () => {
    expect(() => loadSuite(fx, { workDir: scratchDir() })).toThrow(SuiteError);
    expect(() => loadSuite(ve, { workDir: scratchDir(), format: 'cvdp' })).toThrow(/needs a .jsonl/);
    expect(() => loadSuite(join(fx, 'nope.jsonl'), { workDir: scratchDir() })).toThrow(/not found/);
  });
});

describe('CVDP JSONL', () => {
  it('cid012 record: DUT from harness src/, TARGET from src/.env, instance from the prompt, no reference without solutions', () => {
    const work = scratchDir();
    const s = loadSuite(cvdpPlain, { workDir: work });
    expect(s.format).toBe('cvdp');
    expect(s.tasks.length).toBe(1);
    const t = s.tasks[0];
    expect(t).toMatchObject({ id: 'cvdp_copilot_gf_multiplier_0039', top: 'gf_multiplier', instance: 'uut', coverageTarget: 90 });
    expect(t.error).toBeUndefined();
    expect(t.designFiles.length).toBe(1);
    expect(t.designFiles[0].startsWith(work)).toBe(true);
    expect(t.designFiles[0]).toMatch(/src\/gf_multiplier\.sv$/);
    expect(readFileSync(t.designFiles[0], 'utf8')).toMatch(/module gf_multiplier/);
    expect(t.instruction).toMatch(/^Develop a testbench to generate stimuli for the gf_multiplier module/);
    expect(t.reference).toBeUndefined(); // output.context holds an empty testbench
  });

  it('*_with_solutions: the reference testbench from output.context', () => {
    const s = loadSuite(cvdpSol, { workDir: scratchDir() });
    const t = s.tasks[0];
    expect(t.reference).toMatch(/verif\/gf_multiplier_tb\.sv$/);
    expect(readFileSync(t.reference!, 'utf8')).toMatch(/gf_multiplier uut \(/);
  });

  it('records of other categories are skipped, not tasks', () => {
    const s = loadSuite(cvdpAgentic, { workDir: scratchDir() });
    expect(s.format).toBe('cvdp');
    expect(s.tasks).toEqual([]);
    expect(s.skipped).toEqual([{ id: 'cvdp_agentic_8x3_priority_encoder_0003', reason: expect.stringMatching(/cid014/) }]);
  });

  it('malformed records become per-task errors with reasons; the rest still load', () => {
    const s = loadSuite(join(fx, 'cvdp_small.jsonl'), { workDir: scratchDir() });
    const by = Object.fromEntries(s.tasks.map((t) => [t.id, t]));
    expect(s.tasks.map((t) => t.id)).toEqual([
      'cvdp_ok_0001',
      'cvdp_no_env_0002',
      'cvdp_no_target_0003',
      'cvdp_no_src_0004',
      'cvdp_inst_0006',
      'cvdp_bad_dut_0007',
      'line-8',
    ]);
    expect(by.cvdp_ok_0001.error).toBeUndefined();
    expect(by.cvdp_no_env_0002.error).toMatch(/no src\/\.env/);
    expect(by.cvdp_no_target_0003.error).toMatch(/no TARGET/);
    expect(by.cvdp_no_src_0004.error).toMatch(/no DUT/);
    expect(by['line-8'].error).toMatch(/line 8: not valid JSON/);
    expect(by.cvdp_inst_0006).toMatchObject({ instance: 'dut_inst', coverageTarget: 75 });
    // Elaboration is checked by the runner (a per-task error there), not by the adapter.
    expect(by.cvdp_bad_dut_0007.error).toBeUndefined();
    expect(s.skipped.map((x) => x.id)).toEqual(['cvdp_other_0005']);
  });

  it('helpers: TARGET parsing, instance names, top choice', () => {
    expect(cvdpCoverageTarget('HASH = x\nTARGET = 90\n')).toBe(90);
    expect(cvdpCoverageTarget('TARGET=87.5')).toBe(87.5);
    expect(cvdpCoverageTarget('HASH = 1')).toBeNull();
    expect(instanceFromPrompt('The `fifo` module is instantiated as `dut`, with ...')).toBe('dut');
    expect(instanceFromPrompt('Use the instance name `u_fifo` for the DUT')).toBe('u_fifo');
    expect(instanceFromPrompt('Nothing here')).toBeNull();
    const a = 'module leaf(input a); endmodule';
    const b = 'module top_m(input a); leaf u_leaf(.a(a)); endmodule';
    expect(chooseTop([a, b], null, '')).toBe('top_m');
    expect(chooseTop([a, b], 'verif/leaf_tb.sv', '')).toBe('leaf');
  });
});

describe('LLM4Cov dataset records', () => {
  it('records load with targets; malformed lines and records are per-task errors', () => {
    const work = scratchDir();
    const s = loadSuite(join(fx, 'llm4cov_small.jsonl'), { workDir: work });
    expect(s.format).toBe('llm4cov');
    expect(s.tasks.map((t) => t.id)).toEqual(['and2_ok', 'broken_design', 'line-3', 'bad_targets', 'no_rtl', 'line-7']);
    const ok = s.tasks[0];
    expect(ok).toMatchObject({
      top: 'and2',
      instance: 'dut',
      coverageTarget: 95,
      instruction: expect.stringMatching(/instance it as 'dut'/),
    });
    expect(ok.targets).toHaveLength(2);
    expect(ok.designFiles.map((f) => basename(f))).toEqual(['and2.sv']);
    expect(existsSync(ok.specFiles[0])).toBe(true);
    expect(s.tasks[1].error).toBeUndefined(); // does not elaborate: found by the runner
    expect(s.tasks[2].error).toMatch(/line 3: not valid JSON/);
    expect(s.tasks[3].error).toMatch(/targets\[0\]/);
    expect(s.tasks[4].error).toMatch(/rtl_files is empty/);
    expect(s.tasks[5].error).toMatch(/not an LLM4Cov record/);
  });

  it('format detection by record shape; --suite-format overrides', () => {
    expect(detectJsonlFormat([undefined, { id: 1, rtl_files: [], targets: [] }])).toBe('llm4cov');
    expect(detectJsonlFormat([{ id: 'x', categories: ['cid012'], harness: { files: {} } }])).toBe('cvdp');
    expect(detectJsonlFormat([{ a: 1 }])).toBeNull();
    // Read as the other kind: every record is a per-task error, the run does not abort.
    const s = loadSuite(join(fx, 'llm4cov_small.jsonl'), { workDir: scratchDir(), format: 'cvdp' });
    expect(s.tasks.length).toBe(6);
    expect(s.tasks.every((t) => t.error)).toBe(true);
  });
});
