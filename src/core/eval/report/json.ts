// report.json: the stable machine-readable record of an evaluation (schema in docs/eval.md).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EvalReport } from './model.js';
import { REPORT_SCHEMA_VERSION } from './model.js';
import { renderMarkdown } from './md.js';
import { renderHtml } from './html.js';

export function renderJson(r: EvalReport): string {
  return JSON.stringify(r, null, 2) + '\n';
}

export function readReport(path: string): EvalReport {
  const r = JSON.parse(readFileSync(path, 'utf8')) as EvalReport;
  if (r.schema_version !== REPORT_SCHEMA_VERSION)
    throw new Error(`${path}: report schema ${r.schema_version}, this build reads ${REPORT_SCHEMA_VERSION}`);
  return r;
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
