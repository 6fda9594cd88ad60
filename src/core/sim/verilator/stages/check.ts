// Stage "check": nothing is compiled or run before the candidate passes it. First the static check
// of the testbench as written (sim/safety.ts: no escape through system tasks, DPI, C code, files
// outside the run and design directories, redeclared design units), before any tool runs; then,
// because macros, token pasting, `include and `ifdef can assemble what that check looks for, the
// same check on what the build really reads: Verilator's preprocessed text (-E) and its own parse
// (--xml-only on 5.006, --json-only on current releases; netlistCheck.ts) of the exact flat build.
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Diagnostic } from '../../result.js';
import {
  checkPreprocessed,
  checkTestbench,
  fileCallSites,
  includedFileProblems,
  testbenchFiles,
  testbenchPart,
  type SafetyOptions,
} from '../../safety.js';
import { killedFromOutside, killedMessage, outOfMemoryDiagnostic, ranOutOfMemory } from '../../jail.js';
import { testbenchTopOf, testbenchTops } from '../../../design/lexer.js';
import { tokenize, withoutComments } from '../../../design/svTokens.js';
import { isNoise, parseVerilatorMessages, toolCrash, toolProblem, withholdForeignSource } from '../diagnostics.js';
import { checkJsonNetlist, checkXmlNetlist } from '../netlistCheck.js';
import type { Toolchain } from '../toolchain.js';
import { bounded, type Candidate, crashEnding, Ending, errorText, rejection, secondsSince, toolchainMessage } from './candidate.js';
import type { Prepared } from './prepare.js';
import { integrityDiagnostics, readIntegrity, type IntegrityReading, type IntegrityResult } from '../../slang/integrity.js';
import { designFacts } from '../../slang/frontEnd.js';
import type { DesignFacts } from '../../../design/facts.js';

/** The static check's options: `runDir` once the run directory exists (relative paths resolve there). */
export function safetyOptions(c: Candidate, runDir?: string): SafetyOptions {
  return {
    jailed: c.jail.kind !== 'none',
    file: c.tbName,
    paths: { runDir, includeDirs: c.req.design.includeDirs.map((d) => resolve(d)), roots: c.view.roots },
    designNames: c.designNames,
  };
}

/**
 * The static check of the testbench as written, and its top module (`tb_<top>` when it declares
 * one, else its first). Nothing runs if the candidate tries to escape. `startedAt`: when the
 * check began (the design view is taken within it), for timings.check.
 */
export function staticCheck(c: Candidate, startedAt: number): Ending | { tbTop: string } {
  const rejected = checkTestbench(c.req.testbench.content, safetyOptions(c));
  c.timings.check = secondsSince(startedAt);
  if (rejected.length) return rejection(rejected);
  const tops = testbenchTops(c.req.testbench.content);
  if (tops.length === 0) {
    const d: Diagnostic = {
      file: c.tbName,
      origin: 'testbench',
      line: 1,
      column: 1,
      severity: 'error',
      code: 'CHORUS-NOMODULE',
      message: 'the testbench declares no module',
      suggestion: 'Wrap the stimulus in `module tb; ... endmodule`.',
      stage: 'lint',
    };
    return new Ending('xrun_failed', 'lint', { err_msg: `${c.tbName}:1:1: ${d.message}`, diagnostics: [d] });
  }
  return { tbTop: testbenchTopOf(tops, c.req.top)! };
}

/**
 * The check repeated on what the build reads: Verilator's preprocessed text (-E) and its parse of
 * the exact flat build (prepare.ts buildArgs: the front end's flags, so VERILATOR_TIMING... are
 * defined; the design's files before the testbench, so their macros are defined when it is read; a
 * retry's flags and control file). Nothing is compiled before both said OK. A front-end error here
 * is the candidate's lint result (the build would stop on the same errors).
 *
 * `flat`: the library build reads the testbench after the wrapper alone; when that changes the
 * testbench's preprocessed text, the candidate must be built flat, the build that was checked.
 */
export async function checkPasses(c: Candidate, tc: Toolchain, prep: Prepared): Promise<Ending | { flat: boolean; notes: Diagnostic[] }> {
  const { req, retry, limits, tbName } = c;
  const { runDir, tbPath, flatSources, tool, buildArgs, files } = prep;
  const ts = performance.now();
  const checkedBefore = c.timings.check ?? 0;
  const json = tc.caps.jsonOnly || !tc.caps.xmlOnly;
  const netlist = json
    ? ['--json-only', '--json-only-output', 'chorus_check.json', '--json-only-meta-output', 'chorus_check.meta.json']
    : ['--xml-only', '--xml-output', 'chorus_check.xml'];
  const preOpts = { cwd: runDir, timeoutS: 60, outputLimitBytes: 32 * 1024 * 1024 };
  const [pre, preLib, parsed, reach, facts] = await Promise.all([
    // -v libraries are read after every other file: they cannot change the testbench's text,
    // and without them -E's output ends with the testbench.
    tool('preprocess', tc.verilator, ['-E', ...buildArgs(false), ...flatSources], preOpts),
    req.build !== 'flat' && !retry && readsEarlierMacros(req.testbench.content)
      ? tool('preprocess', tc.verilator, ['-E', ...buildArgs(false), tbPath], preOpts)
      : undefined,
    tool('front-end', tc.verilator, [...buildArgs(true), ...netlist, ...flatSources], {
      cwd: runDir,
      timeoutS: limits.buildTimeoutS,
      outputLimitBytes: 8 * 1024 * 1024,
    }),
    // What the testbench does to the design, on slang's elaboration of the same sources.
    (c.share ? c.share.integrity : readIntegrity)({
      design: req.design,
      designFiles: flatSources.slice(0, -1),
      testbench: tbPath,
      tbTop: prep.tbTop,
      dutTop: req.top,
      jail: c.jail,
      view: c.view,
      memoryLimitMb: limits.buildMemoryLimitMb,
      timeoutS: limits.buildTimeoutS,
      signal: req.signal,
    }),
    // The scored configuration's parameters (cached per design).
    designFacts(req.design, { top: req.top, signal: req.signal }).catch((): DesignFacts | null => null),
  ]);
  c.timings.check = checkedBefore + secondsSince(ts);
  const checked = { ...safetyOptions(c, runDir), sourceName: tbPath };
  // Even a failed pass names the files it entered: one outside the design is refused here,
  // before anything could quote it.
  const hidden =
    pre.exitCode === 0
      ? checkPreprocessed(pre.stdout, checked)
      : includedFileProblems(testbenchPart(pre.stdout, [tbPath, tbName]), checked);
  if (hidden.length) return rejection(hidden);
  const parseLog = withholdForeignSource(parsed.all, files.ownOrToolchain);
  if (parsed.cancelled) return new Ending('exception', 'lint', { err_msg: 'cancelled' });
  if (parsed.timedOut)
    return new Ending('timeout', 'lint', { err_msg: `Verilator did not finish within ${limits.buildTimeoutS}s`, log: bounded(parseLog) });
  if (parsed.exitCode !== 0) {
    if (killedFromOutside(parsed))
      return new Ending('exception', 'lint', { err_msg: killedMessage("Verilator's front end"), log: bounded(parseLog) });
    if (ranOutOfMemory(parsed)) {
      const d = outOfMemoryDiagnostic("Verilator's front end", limits.buildMemoryLimitMb, tbName, 'lint');
      return new Ending('xrun_failed', 'lint', { err_msg: d.message, diagnostics: [d], log: bounded(parseLog) });
    }
    const crash = toolCrash(parsed, "Verilator's front end");
    if (crash) return crashEnding(c, crash, 'lint', parseLog);
    // The front end would stop on the same errors: they are the candidate's lint result.
    const problem = toolProblem(parseLog);
    if (problem) return new Ending('exception', 'lint', { err_msg: toolchainMessage(tc, problem), returncode: 2, log: bounded(parseLog) });
    const diags = parseVerilatorMessages(parseLog, files.classify, 'lint').filter((d) => !isNoise(d));
    return new Ending('xrun_failed', 'lint', { err_msg: errorText(parseLog, diags), diagnostics: diags, log: bounded(parseLog) });
  }
  const unreadable = (why: string): Ending => unreadableCheck(tbName, why);
  if (pre.exitCode !== 0)
    return unreadable(
      `Verilator's preprocessor (-E) failed where its build did not (${
        withholdForeignSource(pre.all, files.ownOrToolchain)
          .split('\n')
          .find((l) => l.startsWith('%Error')) ?? `exit ${pre.exitCode}`
      })`,
    );
  const owned = new Set(testbenchFiles(pre.stdout, [tbPath, tbName]).flatMap((f) => [f, resolve(runDir, f)]));
  const netlistOpts = {
    ...checked,
    owned: (f: string) => f !== '' && (owned.has(f) || owned.has(resolve(runDir, f))),
    judgedCalls: fileCallSites(pre.stdout, checked),
    designNative: req.designNativeCode ?? 'allow',
  };
  let found: Diagnostic[];
  try {
    found = json
      ? checkJsonNetlist(
          readFileSync(join(runDir, 'chorus_check.json'), 'utf8'),
          readFileSync(join(runDir, 'chorus_check.meta.json'), 'utf8'),
          netlistOpts,
        )
      : checkXmlNetlist(readFileSync(join(runDir, 'chorus_check.xml'), 'utf8'), netlistOpts);
  } catch (e) {
    return unreadable(`Verilator's parse of the build could not be read (${(e as Error).message})`);
  }
  for (const f of ['obj_check', 'chorus_check.json', 'chorus_check.meta.json', 'chorus_check.xml'])
    rmSync(join(runDir, f), { recursive: true, force: true });
  const notes = found.filter((d) => d.origin === 'dut' && d.severity === 'warning');
  found = found.filter((d) => !notes.includes(d));
  if (found.length) return rejection(found);
  const reached = reachOf(reach, c, tbPath, facts);
  if (reached instanceof Ending) return reached;
  if (reached.length) return rejection(reached);
  const flat = Boolean(
    preLib && (preLib.exitCode !== 0 || testbenchPart(preLib.stdout, [tbPath, tbName]) !== testbenchPart(pre.stdout, [tbPath, tbName])),
  );
  c.timings.check = checkedBefore + secondsSince(ts);
  return { flat, notes };
}

/** A refusal when the check could not see what would be compiled. */
function unreadableCheck(tbName: string, why: string): Ending {
  return rejection([
    {
      file: tbName,
      origin: 'testbench',
      line: 1,
      column: 1,
      severity: 'error',
      code: 'CHORUS-CHECK',
      message: `the check cannot see what would be compiled: ${why}`,
      suggestion: 'Keep to plain SystemVerilog that Verilator preprocesses without errors.',
      stage: 'check',
    },
  ]);
}

/** The parameters the testbench gives the design's top, when every instance has the same ones and
 * each is a plain integer (what another tool can be told with -G); undefined otherwise. */
function instanceParams(reading: IntegrityReading): string[] | undefined {
  const sets = reading.dutInstances.map((i) =>
    i.params
      .filter((p) => p.overridden && !p.local)
      .map((p) => (p.type || p.value === null || !/^-?\d+$/.test(p.value) ? null : `${p.name}=${p.value}`)),
  );
  if (!sets.length || sets.some((s) => s.includes(null))) return undefined;
  const first = JSON.stringify(sets[0]);
  return sets.every((s) => JSON.stringify(s) === first) ? (sets[0] as string[]) : undefined;
}

/** The integrity reading as refusals, or the Ending when it could not be made. */
function reachOf(reach: IntegrityResult, c: Candidate, tbPath: string, facts: DesignFacts | null): Ending | Diagnostic[] {
  if (!reach.ok) {
    if (reach.cancelled) return new Ending('exception', 'lint', { err_msg: 'cancelled' });
    return unreadableCheck(c.tbName, `the design front end (slang) could not judge it: ${reach.why}`);
  }
  if (!reach.reading.ok) {
    const first = reach.reading.diagnostics[0];
    return unreadableCheck(c.tbName, `slang could not elaborate the testbench${first ? ` (${first.message})` : ''}`);
  }
  c.elaborated.dutParams = instanceParams(reach.reading);
  return integrityDiagnostics(reach.reading, {
    tbName: c.tbName,
    tbPath,
    dutTop: c.req.top,
    facts,
    requested: c.req.design.params,
  });
}

/** Directives whose effect on the testbench's text does not depend on what was defined before it. */
const PLAIN_DIRECTIVES = new Set([
  'timescale',
  'default_nettype',
  'resetall',
  'celldefine',
  'endcelldefine',
  'unconnected_drive',
  'nounconnected_drive',
  'begin_keywords',
  'end_keywords',
  'line',
  'pragma',
  'define',
]);

/**
 * True when the testbench's preprocessed text can depend on macros defined before it (by the
 * design's files in the flat build, by nothing in the library build): it tests or uses a macro,
 * or includes a file that might. Only then can the two builds read it differently, which takes a
 * second -E pass to rule out. (The check itself always runs on the preprocessed text.)
 */
export function readsEarlierMacros(src: string): boolean {
  return tokenize(withoutComments(src)).some((t) => t.kind === 'directive' && !PLAIN_DIRECTIVES.has(t.value));
}
