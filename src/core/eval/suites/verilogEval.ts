// VerilogEval v2 layout (a folder of `ProbNNN_<name>_ref.sv`, `_prompt.txt`, `_test.sv`): the
// reference design `RefModule` is the DUT, 100% coverage is required (AutoEval-ECov), the prompt is
// the spec, and VerilogEval's own human testbench is the reference (it compares RefModule with a
// TopModule, so a copy of the reference renamed TopModule rides along with it).
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { EvalTask } from '../task.js';
import { DEFAULT_COVERAGE_TARGET, DEFAULT_INSTANCE } from '../../vocabulary/defaults.js';

export function isVerilogEvalDir(dir: string): boolean {
  try {
    return readdirSync(dir).some((f) => f.endsWith('_ref.sv'));
  } catch {
    return false;
  }
}

export function loadVerilogEval(dirIn: string): EvalTask[] {
  const dir = resolve(dirIn);
  const files = readdirSync(dir);
  const refs = files.filter((f) => f.endsWith('_ref.sv')).sort();
  return refs.map((ref): EvalTask => {
    const id = ref.slice(0, -'_ref.sv'.length);
    const design = join(dir, ref);
    const prompt = join(dir, `${id}_prompt.txt`);
    const test = join(dir, `${id}_test.sv`);
    const task: EvalTask = {
      id,
      designFiles: [design],
      specFiles: existsSync(prompt) ? [prompt] : [],
      top: 'RefModule',
      instance: DEFAULT_INSTANCE,
      coverageTarget: DEFAULT_COVERAGE_TARGET,
    };
    if (existsSync(test)) {
      task.reference = test;
      try {
        task.referenceSuffix = '\n' + readFileSync(design, 'utf8').replace(/\bmodule\s+RefModule\b/, 'module TopModule');
      } catch (e) {
        task.error = `cannot read ${design}: ${(e as Error).message}`;
      }
    }
    return task;
  });
}
