// report.json: the stable machine-readable record of an evaluation (schema in docs/eval.md).
import { DEFAULT_SCORE } from '../../vocabulary/defaults.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EvalReport, EvalSettings } from './model.js';
import type { TaskRecord } from '../task.js';
import { settingDefault } from '../../vocabulary/settings.js';
import { REPORT_SCHEMA_VERSION } from './model.js';
import { renderMarkdown } from './md.js';
import { renderHtml } from './html.js';

export function renderJson(r: EvalReport): string {
  return JSON.stringify(r, null, 2) + '\n';
}

export function readReport(path: string): EvalReport {
  const r = JSON.parse(readFileSync(path, 'utf8')) as EvalReport;
  if ((r.schema_version as number) === 1) return fromSchema1(r as unknown as Schema1);
  if (r.schema_version !== REPORT_SCHEMA_VERSION)
    throw new Error(`${path}: report schema ${r.schema_version}, this build reads ${REPORT_SCHEMA_VERSION} (and 1)`);
  return r;
}

/** What schema 1 said differently: the settings beside the rest of the config, each task's target
 * a fraction named threshold. */
interface Schema1 extends Omit<EvalReport, 'config' | 'tasks'> {
  config: Omit<EvalReport['config'], 'settings'> & {
    samples: number;
    rounds: number;
    seed: number;
    history: EvalSettings['history'];
    sampling: { temperature?: number; topP?: number; maxNewTokens?: number } | null;
    score?: EvalSettings['score'];
  };
  tasks: Array<Omit<TaskRecord, 'coverage_target'> & { threshold: number }>;
}

/** A schema-1 report read as schema 2 (`chorus eval compare` of reports from before the change). */
function fromSchema1(r: Schema1): EvalReport {
  const { samples, rounds, seed, history, sampling, score, ...rest } = r.config;
  const model = sampling !== null;
  const fromSampling = <K extends 'temperature' | 'topP' | 'maxNewTokens'>(k: K): number | null =>
    model ? (sampling?.[k] ?? (settingDefault(k, 'eval') as number)) : null;
  return {
    ...r,
    schema_version: REPORT_SCHEMA_VERSION,
    config: {
      ...rest,
      settings: {
        rounds,
        samples,
        seed,
        timeout: rest.limits.timeoutS ?? settingDefault('timeout', 'eval'),
        score: score ?? DEFAULT_SCORE,
        history,
        temperature: fromSampling('temperature'),
        topP: fromSampling('topP'),
        maxNewTokens: fromSampling('maxNewTokens'),
        simulator: rest.simulator.name as EvalSettings['simulator'],
      },
    },
    tasks: r.tasks.map(({ threshold, ...t }) => ({ ...t, coverage_target: threshold * 100 })),
  };
}

/** Writes report.json, report.md and report.html into dir; returns their paths. */
export function writeReports(r: EvalReport, dir: string): { json: string; md: string; html: string } {
  mkdirSync(dir, { recursive: true });
  const paths = { json: join(dir, 'report.json'), md: join(dir, 'report.md'), html: join(dir, 'report.html') };
  writeFileSync(paths.json, renderJson(r));
  writeFileSync(paths.md, renderMarkdown(r));
  writeFileSync(paths.html, renderHtml(r));
  return paths;
}
