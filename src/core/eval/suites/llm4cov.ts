// The LLM4Cov dataset record (e.g. the CVDP-ECov evaluation set): `{id, rtl_files:[{name, content}],
// spec_files:[{name, content}], dut_module_name, dut_instance_name, instruction,
// targets:[{inst_name, metric, target_percentage}], difficulty?, is_agentic?}`. A sample passes when
// every target is met; a target on a metric other than `Overall Average` that the report lacks is
// skipped (PROTOCOL §5). The headline coverage target is the DUT's Overall Average target.
import type { CovTarget, EvalTask } from '../task.js';
import { coverageTargetFromTargets, emptyTask } from '../task.js';
import { taskDir, writeInside } from './materialize.js';
import { DEFAULT_INSTANCE } from '../../vocabulary/defaults.js';

type Rec = Record<string, unknown>;
const isObj = (x: unknown): x is Rec => typeof x === 'object' && x !== null && !Array.isArray(x);

export function looksLikeLlm4cov(r: unknown): boolean {
  return isObj(r) && Array.isArray(r.rtl_files) && ('targets' in r || 'dut_module_name' in r);
}

function files(x: unknown, what: string): Array<{ name: string; content: string }> {
  if (x === undefined || x === null) return [];
  if (!Array.isArray(x)) throw new Error(`${what} is not a list`);
  return x.map((f, i) => {
    if (!isObj(f) || typeof f.name !== 'string' || typeof f.content !== 'string') throw new Error(`${what}[${i}] is not {name, content}`);
    return { name: f.name, content: f.content };
  });
}

export function llm4covTask(r: Rec, workDir: string, fallbackId: string): EvalTask {
  const id = r.id !== undefined && r.id !== null && String(r.id) ? String(r.id) : fallbackId;
  const base = emptyTask(id);
  try {
    const rtl = files(r.rtl_files, 'rtl_files');
    const specs = files(r.spec_files, 'spec_files');
    if (!rtl.length) throw new Error('rtl_files is empty');
    if (typeof r.dut_module_name !== 'string' || !r.dut_module_name) throw new Error('dut_module_name is missing');
    const instance = typeof r.dut_instance_name === 'string' && r.dut_instance_name ? r.dut_instance_name : DEFAULT_INSTANCE;
    const targets: CovTarget[] = [];
    if (r.targets !== undefined) {
      if (!Array.isArray(r.targets)) throw new Error('targets is not a list');
      for (const [i, t] of r.targets.entries()) {
        if (!isObj(t) || typeof t.inst_name !== 'string' || typeof t.metric !== 'string' || !Number.isFinite(Number(t.target_percentage))) {
          throw new Error(`targets[${i}] is not {inst_name, metric, target_percentage}`);
        }
        targets.push({ inst_name: t.inst_name, metric: t.metric, target_percentage: Number(t.target_percentage) });
      }
    }
    const dir = taskDir(workDir, id);
    return {
      id,
      designFiles: rtl.map((f) => writeInside(dir, f.name, f.content)),
      specFiles: specs.map((f) => writeInside(dir, f.name, f.content)),
      top: r.dut_module_name,
      instance,
      coverageTarget: coverageTargetFromTargets(targets, instance, r.dut_module_name),
      instruction: typeof r.instruction === 'string' && r.instruction ? r.instruction : undefined,
      targets: targets.length ? targets : undefined,
    };
  } catch (e) {
    return { ...base, error: `malformed LLM4Cov record: ${(e as Error).message}` };
  }
}
