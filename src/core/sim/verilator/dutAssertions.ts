// The DUT's assertion failures of one run, one entry per site, from the harness report: the site,
// its count and the times of its first and last failure are the harness's (chorus_main.cpp records
// them in vl_stop_maybe, out of the testbench's reach). Two things come from elsewhere, neither of
// them testbench-writable for what is decided: the kind, read from the design file's own source at
// the site (a design file the host resolved before the build; unique/priority violations reach the
// harness through the same VL_STOP_MT call as an assertion's $error on every Verilator), and the
// message, the first log line printed at that site: display only, never a count, a site or a status.
import { blankComments } from '../../design/lexer.js';
import type { Diagnostic, DutAssertion } from '../result.js';
import { formatSimTime } from '../assertions.js';
import type { FileClassifier } from './diagnostics.js';
import type { HarnessReport } from './harnessReport.js';

/** At most this many sites are listed (the harness records up to 4096). */
export const MAX_DUT_ASSERTIONS = 256;

/** What kind of check sits at `line` of a design file's text (1-based). */
export function assertionKind(text: string | undefined, line: number, stops: boolean): DutAssertion['kind'] {
  const lines = text === undefined ? [] : blankComments(text, true).split('\n');
  const at = lines[line - 1] ?? '';
  const before = lines[line - 2] ?? '';
  if (/\bunique0?\b/.test(at)) return 'unique';
  if (/\bpriority\b/.test(at)) return 'priority';
  if (/\b(assert|assume|expect)\b/.test(at) || (/^\s*(else\b|\$error|\$fatal)/.test(at) && /\b(assert|assume)\b/.test(before)))
    return 'assertion';
  if (/\$fatal\b/.test(at) || stops) return 'fatal';
  if (/\$error\b/.test(at)) return 'error';
  return 'assertion';
}

/** `Assertion failed in tb.uut: push while full` -> `push while full` (the site says where). */
function shortMessage(m: string): string {
  return m
    .replace(/^Assertion failed in [^:\s]+:\s*/, '')
    .replace(/^Assertion failed in \S+$/, 'assertion failed')
    .trim();
}

/**
 * The record's `dutAssertions`: every site the harness recorded in a design file, ordered by its
 * first failure. `runDiags`: the run's diagnostics (already confirmed against the report), for the
 * message only; `readDesignFile`: a known design file's text, undefined for any other file.
 */
export function dutAssertionsOf(
  report: HarnessReport | undefined,
  classify: FileClassifier,
  readDesignFile: (file: string) => string | undefined,
  runDiags: readonly Diagnostic[],
): DutAssertion[] {
  if (!report) return [];
  const sites = report.sites
    .map((s) => ({ s, where: classify(s.file) }))
    .filter(({ where }) => where.origin === 'dut')
    .sort((a, b) => a.s.first - b.s.first || a.where.file.localeCompare(b.where.file) || a.s.line - b.s.line)
    .slice(0, MAX_DUT_ASSERTIONS);
  return sites.map(({ s, where }) => {
    const said = runDiags.find((d) => d.origin === 'dut' && d.file === where.file && d.line === s.line && d.severity === 'error');
    return {
      file: where.file,
      line: s.line,
      kind: assertionKind(readDesignFile(s.file), s.line, s.stops),
      message: said ? shortMessage(said.message).slice(0, 300) : '',
      count: s.count,
      firstTime: formatSimTime(s.first, report.precision),
      lastTime: formatSimTime(s.last, report.precision),
    };
  });
}
