// CVDP JSONL (NVlabs cvdp_benchmark). Only cid012 records ("test plan to testbench stimulus", the
// CVDP-ECov family) are tasks: the DUT is the harness's `src/*.sv`, the coverage target is `TARGET = N`
// in the harness's `src/.env`, the testbench path is the key of `output.context`, and the DUT
// instance name is read from the prompt (`uut` when it does not say). `*_with_solutions` files
// carry the reference testbench as that key's value. Both the non-agentic record
// `{id, categories, input:{prompt, context}, output:{response, context}, harness:{files}}` and the
// agentic one `{id, categories, prompt, context, patch, harness}` are read.
import { emptyTask, type EvalTask } from '../task.js';
import { taskDir, writeInside } from './materialize.js';
import { DEFAULT_INSTANCE } from '../../vocabulary/defaults.js';

type Rec = Record<string, unknown>;
const isObj = (x: unknown): x is Rec => typeof x === 'object' && x !== null && !Array.isArray(x);
const HDL = /\.(sv|v|svh|vh)$/i;

export function looksLikeCvdp(r: unknown): boolean {
  return isObj(r) && Array.isArray(r.categories) && (isObj(r.harness) || isObj(r.input));
}

export function isCid012(r: Rec): boolean {
  return (r.categories as unknown[]).some((c) => String(c).toLowerCase() === 'cid012');
}

function textMap(x: unknown): Record<string, string> {
  if (!isObj(x)) return {};
  return Object.fromEntries(Object.entries(x).filter(([, v]) => typeof v === 'string') as Array<[string, string]>);
}

/** Module names declared in Verilog text (comments stripped). */
export function declaredModules(text: string): string[] {
  const src = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  return [...src.matchAll(/^\s*module\s+(?:automatic\s+|static\s+)?([A-Za-z_][A-Za-z0-9_$]*)/gm)].map((m) => m[1]);
}

/** The DUT instance name the prompt asks for (`instantiated as `uut``, `instance name ... `dut``). */
export function instanceFromPrompt(prompt: string): string | null {
  const pats = [
    /instantiated\s+(?:as|with\s+the\s+(?:instance\s+)?name)\s+[`'"*]*([A-Za-z_][A-Za-z0-9_]*)/i,
    /instance\s+name\s+(?:is|should\s+be|of|as|:)?\s*[`'"*]*([A-Za-z_][A-Za-z0-9_]*)[`'"*]*/i,
    /[`'"]([A-Za-z_][A-Za-z0-9_]*)[`'"]\s+instance\b/i,
  ];
  for (const p of pats) {
    const m = p.exec(prompt);
    if (m && !/^(the|a|an|is|should|be|of|as)$/i.test(m[1])) return m[1];
  }
  return null;
}

/** Choose the DUT top among the declared modules: the one the testbench file is named after, the
 * one the prompt names, else the only module nobody instantiates; '' when unsure. */
export function chooseTop(dutTexts: string[], tbPath: string | null, prompt: string): string {
  const mods = [...new Set(dutTexts.flatMap(declaredModules))];
  if (mods.length === 1) return mods[0];
  const base = tbPath
    ?.split('/')
    .pop()
    ?.replace(/\.s?v$/i, '')
    .replace(/^tb_|_tb$|_testbench$/gi, '');
  if (base && mods.includes(base)) return base;
  const named = mods.filter((m) => new RegExp(`\`${m}\`|\\b${m}\\s+module\\b|module\\s+\`?${m}\\b`).test(prompt));
  if (named.length === 1) return named[0];
  const all = dutTexts
    .join('\n')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '');
  // Instantiated somewhere: `name #(` or `name inst (`.
  const used = (m: string): boolean =>
    new RegExp(`(^|[;\\s])${m}\\s*(#\\s*\\(|[A-Za-z_][A-Za-z0-9_]*\\s*\\()`, 'm').test(
      all.replace(new RegExp(`\\bmodule\\s+${m}\\b`, 'g'), ''),
    );
  const roots = mods.filter((m) => !used(m));
  return roots.length === 1 ? roots[0] : '';
}

export function cvdpCoverageTarget(env: string | undefined): number | null {
  if (env === undefined) return null;
  const m = /^\s*TARGET\s*=\s*([0-9]+(?:\.[0-9]+)?)\s*$/m.exec(env);
  return m ? Number(m[1]) : null;
}

/** One cid012 record as an EvalTask (files written under workDir/<id>/). */
export function cvdpTask(r: Rec, workDir: string, fallbackId: string): EvalTask {
  const id = typeof r.id === 'string' && r.id ? r.id : fallbackId;
  const task = emptyTask(id);
  const input = isObj(r.input) ? r.input : r;
  const prompt = typeof input.prompt === 'string' ? input.prompt : '';
  const harness = textMap(isObj(r.harness) ? r.harness.files : undefined);
  const inCtx = textMap(input.context);
  const outCtx = textMap(isObj(r.output) ? r.output.context : r.patch);
  const dut = Object.entries(harness).filter(([p]) => /^src\//.test(p) && HDL.test(p));
  const rtl = dut.length ? dut : Object.entries(inCtx).filter(([p]) => /^rtl\//.test(p) && HDL.test(p));
  const tbEntry =
    Object.entries(outCtx).find(([p]) => /^verif\//.test(p) && HDL.test(p)) ?? Object.entries(outCtx).find(([p]) => HDL.test(p));
  const coverageTarget = cvdpCoverageTarget(harness['src/.env']);
  if (!rtl.length) return { ...task, error: 'no DUT: the harness has no src/*.sv file' };
  if (coverageTarget === null)
    return {
      ...task,
      error:
        harness['src/.env'] === undefined
          ? 'no src/.env in the harness (it holds TARGET, the coverage target)'
          : 'src/.env has no TARGET = N line',
    };
  task.coverageTarget = coverageTarget;
  task.instruction = prompt || undefined;
  task.instance = instanceFromPrompt(prompt) ?? DEFAULT_INSTANCE;
  task.top = chooseTop(
    rtl.map(([, t]) => t),
    tbEntry?.[0] ?? null,
    prompt,
  );
  const dir = taskDir(workDir, id);
  task.designFiles = rtl.map(([p, t]) => writeInside(dir, p, t));
  // Documents in the input context (specs, plans) are spec files; RTL and testbenches are not.
  task.specFiles = Object.entries(inCtx)
    .filter(([p]) => !HDL.test(p) && !/^(verif|rtl|src)\//.test(p))
    .map(([p, t]) => writeInside(dir, p, t));
  if (tbEntry && tbEntry[1].trim()) task.reference = writeInside(dir, tbEntry[0], tbEntry[1]);
  return task;
}
