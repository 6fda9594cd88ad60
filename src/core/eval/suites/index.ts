// Suite loading: the path decides the kind (a folder: VerilogEval layout; a .jsonl file: CVDP or
// LLM4Cov by record shape), `format` overrides. Problems with single records or files become
// per-task errors; only an unreadable suite path is fatal.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type { EvalFormat, EvalSuite, EvalTask } from '../task.js';
import { isVerilogEvalDir, loadVerilogEval } from './verilogEval.js';
import { cvdpTask, isCid012, looksLikeCvdp } from './cvdp.js';
import { llm4covTask, looksLikeLlm4cov } from './llm4cov.js';
import { DEFAULT_COVERAGE_TARGET, DEFAULT_INSTANCE } from '../../vocabulary/defaults.js';

export const EVAL_FORMATS: EvalFormat[] = ['verilog-eval', 'cvdp', 'llm4cov'];

export class SuiteError extends Error {
  override name = 'SuiteError';
}

export interface LoadSuiteOptions {
  format?: EvalFormat;
  /** Where files of JSONL records are written (one folder per task). */
  workDir: string;
}

function parseLines(text: string): Array<{ line: number; value?: unknown; error?: string }> {
  const out: Array<{ line: number; value?: unknown; error?: string }> = [];
  text.split(/\r?\n/).forEach((l, i) => {
    if (!l.trim()) return;
    try {
      out.push({ line: i + 1, value: JSON.parse(l) });
    } catch (e) {
      out.push({ line: i + 1, error: (e as Error).message });
    }
  });
  return out;
}

/** The JSONL kind from the first record that has a recognizable shape. */
export function detectJsonlFormat(records: unknown[]): EvalFormat | null {
  for (const r of records) {
    if (looksLikeLlm4cov(r)) return 'llm4cov';
    if (looksLikeCvdp(r)) return 'cvdp';
  }
  return null;
}

export function loadSuite(pathIn: string, o: LoadSuiteOptions): EvalSuite {
  const path = resolve(pathIn);
  if (!existsSync(path)) throw new SuiteError(`suite not found: ${path}`);
  const name = basename(path).replace(/\.jsonl$/i, '');
  if (statSync(path).isDirectory()) {
    if (o.format && o.format !== 'verilog-eval')
      throw new SuiteError(`${path} is a folder; --suite-format ${o.format} needs a .jsonl file`);
    if (!o.format && !isVerilogEvalDir(path))
      throw new SuiteError(`${path} holds no *_ref.sv files: not a VerilogEval v2 folder (a JSONL suite is a .jsonl file)`);
    return { name, path, format: 'verilog-eval', tasks: loadVerilogEval(path), skipped: [] };
  }
  if (o.format === 'verilog-eval') throw new SuiteError(`${path} is a file; the VerilogEval layout is a folder`);
  const lines = parseLines(readFileSync(path, 'utf8'));
  const format = o.format ?? detectJsonlFormat(lines.map((l) => l.value));
  if (!format)
    throw new SuiteError(
      `${path}: no record looks like a CVDP record ({id, categories, harness, ...}) or an LLM4Cov record ({id, rtl_files, targets, ...}); name the kind with --suite-format`,
    );
  const tasks: EvalTask[] = [];
  const skipped: EvalSuite['skipped'] = [];
  const seen = new Map<string, number>();
  for (const l of lines) {
    const fallbackId = `line-${l.line}`;
    // A line that yields no task still gets a row in the report, with the reason.
    const unreadable = (error: string): EvalTask => ({
      id: fallbackId,
      designFiles: [],
      specFiles: [],
      top: '',
      instance: DEFAULT_INSTANCE,
      coverageTarget: DEFAULT_COVERAGE_TARGET,
      error,
    });
    let task: EvalTask;
    if (l.error !== undefined) {
      task = unreadable(`line ${l.line}: not valid JSON (${l.error})`);
    } else if (format === 'cvdp') {
      if (!looksLikeCvdp(l.value)) {
        task = unreadable(`line ${l.line}: not a CVDP record (needs categories and harness)`);
      } else {
        const r = l.value as Record<string, unknown>;
        if (!isCid012(r)) {
          skipped.push({
            id: String(r.id ?? fallbackId),
            reason: `category ${(r.categories as unknown[]).join('/')} is not cid012 (testbench stimulus)`,
          });
          continue;
        }
        task = cvdpTask(r, o.workDir, fallbackId);
      }
    } else {
      task = looksLikeLlm4cov(l.value)
        ? llm4covTask(l.value as Record<string, unknown>, o.workDir, fallbackId)
        : unreadable(`line ${l.line}: not an LLM4Cov record (needs rtl_files, dut_module_name, targets)`);
    }
    // Ids key the cache and the reports: keep them unique.
    const n = seen.get(task.id) ?? 0;
    seen.set(task.id, n + 1);
    if (n > 0) task = { ...task, id: `${task.id}#${n + 1}`, error: task.error ?? `duplicate id (line ${l.line})` };
    tasks.push(task);
  }
  return { name, path, format, tasks, skipped };
}

/** `--tasks` and `--limit`: ids (exact, or a prefix ending before `_`, e.g. Prob001), then the first K. */
export function selectTasks(tasks: EvalTask[], ids?: string[], limit?: number): EvalTask[] {
  let out = tasks;
  if (ids?.length) {
    const want = ids.map((s) => s.trim()).filter(Boolean);
    out = tasks.filter((t) => want.some((w) => t.id === w || t.id.startsWith(w + '_')));
  }
  return limit !== undefined ? out.slice(0, limit) : out;
}
