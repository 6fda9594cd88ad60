// The Verilator backend: static check -> Verilator front end (lint/elaboration, C++ generation)
// -> C++ compile against the cached runtime and precompiled header -> jailed run -> coverage.
// Every candidate gets its own scratch directory; nothing else on disk is written.
//
// simulate() is the pipeline only: each stage is a function of its own module under stages/
// (candidate.ts says what they share), which returns its output or an Ending; the first Ending is
// the result. Why the stages are apart: each can be read, reviewed and tested alone, and the order
// of the security checks stays visible here (nothing is compiled before the check, nothing is run
// before the build, nothing is scored but the harness report, nothing is opened but design files).
import { rmSync } from 'node:fs';
import type { Simulator, SimRequest, SimulatorInfo } from '../simulator.js';
import type { SimResult } from '../result.js';
import { isCovered } from '../../coverage/model.js';
import type { DutCoverage } from '../../coverage/analyze.js';
import { formalReach } from '../formal/reach.js';
import { applyFormal, formalQuestion, notRun, type FormalSummary } from '../../coverage/formal.js';
import { detectJail } from '../jail.js';
import { untrackScratch } from '../../util/scratch.js';
import { scanUnits } from '../../design/lexer.js';
import { ensureRuntime, findToolchain, ToolchainError } from './toolchain.js';
import { availableParallelism } from 'node:os';
import {
  candidate,
  Ending,
  readSource,
  simResult,
  secondsSince,
  type Known,
  type MemberShare,
  type SettleRetry,
} from './stages/candidate.js';
import { buildShared } from './stages/sharedBuild.js';
import { scoreGroup } from './group.js';
import { createRunDir, prepare } from './stages/prepare.js';
import { checkPasses, staticCheck } from './stages/check.js';
import { compileModel, lintResult, verilate } from './stages/build.js';
import { runHarness } from './stages/run.js';
import { coveragePath, keepCoverage, readCoverage } from './stages/coverage.js';
import { classifyCovered, endWithoutCoverage, judgeRun, notSettled } from './stages/classify.js';
import { mayRetry, settledWith, settleKey, settleRetry, type SettledDesign } from './settleRetry.js';

// The stages' pure parts, where callers and tests have always found them.
export type { SettleRetry } from './stages/candidate.js';
export { VERILATOR_FLAGS, designArgs } from './stages/prepare.js';
export { readsEarlierMacros } from './stages/check.js';
export { stopPositions } from './stages/run.js';
export { foldLibraryLevel } from './stages/coverage.js';
export { classifyRun, confirmRunDiagnostics, fatalLine } from './stages/classify.js';

export class VerilatorSimulator implements Simulator {
  readonly name = 'verilator';
  /** Designs that settled only with a workaround: later candidates start with it (same semantics every round). */
  private readonly settled = new Map<string, SettledDesign>();
  /** The units the design declares, by design identity (settleKey: files, sizes, times): read and
   * scanned once per design, not once per candidate. */
  private readonly unitNames = new Map<string, string[]>();

  private designNamesOf(req: SimRequest): string[] {
    const key = settleKey(req);
    let names = this.unitNames.get(key);
    if (!names) {
      names = [...req.design.files, ...req.design.libraryFiles].flatMap((f) => {
        const u = scanUnits(readSource(f));
        return [...u.modules, ...u.interfaces, ...u.packages];
      });
      if (this.unitNames.size > 64) this.unitNames.clear();
      this.unitNames.set(key, names);
    }
    return names;
  }

  async info(): Promise<SimulatorInfo> {
    const tc = await findToolchain();
    return { name: this.name, version: tc.version };
  }

  /**
   * `retry`: the second try of a design whose logic did not settle (see settleRetry.ts). A tool
   * that crashes on the candidate (CHORUS-CRASH) gets one more run: a crash that comes back is the
   * candidate's verdict (a failed run, reward 0: a policy that found a crashing construct earns
   * nothing and the trainer moves on), one that does not was the host's, and the second run stands.
   */
  async simulate(req: SimRequest, retry?: SettleRetry): Promise<SimResult> {
    return this.againIfCrashed(req, await this.attempt(req, retry), retry);
  }

  /**
   * Several testbenches of one design (group.ts): each gets exactly the result it would get alone,
   * in order; what the members share is the work, not their runs. `parallel`: processes at once
   * (default: the machine's cores).
   */
  simulateGroup(reqs: SimRequest[], opts: { parallel?: number } = {}): Promise<SimResult[]> {
    return scoreGroup(reqs, {
      parallel: opts.parallel ?? availableParallelism(),
      alone: (req) => this.simulate(req),
      attempt: (req, share) => this.attempt(req, undefined, share),
      again: (req, first) => this.againIfCrashed(req, first),
      sharable: (req) => !this.settled.has(settleKey(req)),
      build: async (members, slots) => {
        const tc = await findToolchain();
        return buildShared(members, tc, await ensureRuntime(tc), slots);
      },
    });
  }

  /** A crash of the tool gets one more run (see simulate). */
  private async againIfCrashed(req: SimRequest, first: SimResult, retry?: SettleRetry): Promise<SimResult> {
    if (!crashed(first) || req.signal?.aborted) return first;
    const second = await this.attempt(req, retry);
    return crashed(second) ? crashVerdict(second) : second;
  }

  private async attempt(req: SimRequest, retry?: SettleRetry, share?: MemberShare): Promise<SimResult> {
    if (!retry && !share) {
      const known = this.settled.get(settleKey(req));
      if (known) return settledWith(await this.simulate({ ...req, build: 'flat' }, known.spec), req, known.spec, known.loops, known.where);
    }
    const t0 = performance.now();
    const jail = await detectJail();
    const checkStart = performance.now();
    const c = candidate(req, retry, { t0, jail, designNames: () => this.designNamesOf(req), ...(share ? { share } : {}) });
    const known: Known = { version: 'unknown', tbTop: null, build: undefined };
    const finish = (e: Ending): SimResult => simResult(this.name, c, known, e);

    const stage = (name: 'check' | 'build' | 'run' | 'coverage'): void => {
      try {
        req.onStage?.(name);
      } catch {
        // progress display only: never the run's concern
      }
    };
    // 1. Static check: nothing runs if the candidate tries to escape.
    stage('check');
    const checked = staticCheck(c, checkStart);
    if (checked instanceof Ending) return finish(checked);
    known.tbTop = checked.tbTop;

    let tc;
    let runtime;
    try {
      tc = await findToolchain();
      known.version = tc.version;
      runtime = await ensureRuntime(tc, req.signal);
    } catch (e) {
      return finish(new Ending('exception', 'build', { err_msg: (e as Error).message, returncode: 2 }));
    }

    const runDir = createRunDir(c);
    try {
      const prep = prepare(c, tc, runDir, checked.tbTop);
      // 2. The check again on what the build reads (-E and Verilator's parse); then the build.
      const passes = await checkPasses(c, tc, prep);
      if (passes instanceof Ending) return finish(passes);
      stage('build');
      const front = await verilate(c, tc, runtime, prep, passes.flat ? 'flat' : req.build);
      known.build = front.build;
      const linted = lintResult(c, tc, front, prep.files.classify);
      if (linted instanceof Ending) return finish(linted);
      // The design's $readmem files that none of its folders hold: an error the summary shows.
      const warnings = [...linted, ...prep.dataFiles.missing, ...passes.notes];
      const shared = c.share ? await c.share.compile({ c, runDir: prep.runDir, lib: front.lib }) : 'alone';
      if (shared !== 'alone') known.build = { ...front.build, sharedUnit: shared.unit };
      const compiled = shared !== 'alone' ? undefined : await compileModel(c, tc, runtime, prep, front.lib, warnings);
      if (compiled) return finish(compiled);

      // 3. Run, jailed and bounded; what is scored comes from its harness report only.
      stage('run');
      const ran = await runHarness(c, runtime, runDir, warnings);
      if (ran instanceof Ending) return finish(ran);
      let judged = judgeRun(c, ran, warnings, prep.files.classify, prep.files.readDesignFile);
      if (judged.unsettled) {
        // The DUT's combinational loop, on every version: retry what can work, else say so.
        if (mayRetry(retry)) {
          const again = await settleRetry((r, s) => this.simulate(r, s), req, tc, warnings, judged.unsettled.limit, Boolean(retry));
          if (again) {
            if (again.worked) this.settled.set(settleKey(req), { spec: again.worked, loops: again.loops, where: again.where });
            return again.result;
          }
        }
        judged = notSettled({ ...judged, unsettled: judged.unsettled }, warnings, retry, tc.caps.convergeLimit);
      }

      // 4. Coverage, from the harness report; then the status.
      stage('coverage');
      const covStart = performance.now();
      const covText = ran.report?.coverage ?? '';
      keepCoverage(c, runDir, covText);
      // The host's own copy of the database (the harness report), for the caller's run folder.
      if (covText && req.onCoverageData) req.onCoverageData(covText);
      c.timings.coverage = secondsSince(covStart);
      const bare = endWithoutCoverage(judged, ran);
      if (bare) return finish(bare);
      const cov = readCoverage(c, { covText, lib: front.lib, files: prep.files, warnings, log: ran.run.all });
      if (cov instanceof Ending) return finish(cov);
      if (req.formal && req.formal.designS > 0) {
        const formalStart = performance.now();
        cov.formal = await formalOf(req, cov, Boolean(front.lib), c.elaborated.dutParams);
        c.timings.formal = secondsSince(formalStart);
      }
      c.timings.coverage = secondsSince(covStart);
      return finish(classifyCovered(c, judged, ran, cov, req.keepRunDir && covText ? coveragePath(runDir) : undefined));
    } catch (e) {
      const msg = e instanceof ToolchainError ? e.message : `internal error: ${(e as Error).stack ?? e}`;
      return finish(new Ending('exception', 'build', { err_msg: msg }));
    } finally {
      if (!req.keepRunDir) rmSync(runDir, { recursive: true, force: true });
      untrackScratch(runDir);
    }
  }
}

function crashed(r: SimResult): boolean {
  return r.status === 'exception' && r.diagnostics.some((d) => d.code === 'CHORUS-CRASH');
}

/** A crash that came back on the second run: the candidate's failed run. */
function crashVerdict(r: SimResult): SimResult {
  return {
    ...r,
    status: 'xrun_failed',
    returncode: 1,
    reward: 0,
    err_msg: `${r.err_msg} (the same crash on a second run: the code makes the simulator crash; not a host fault)`,
  };
}

/**
 * The formal engine's verdicts entered in `cov` (coverage/formal.ts), and its summary for the
 * record. An engine that is not installed or fails is said in the summary (ok: false), never the
 * run's failure, and never a diagnostic (those are the model's feedback).
 */
async function formalOf(
  req: SimRequest,
  cov: DutCoverage,
  library: boolean,
  instanceParams: string[] | undefined,
): Promise<FormalSummary | undefined> {
  const question = formalQuestion(cov);
  if (!question.length || !question.some((p) => !isCovered(p))) return undefined;
  // The engine must elaborate the design with the parameters the run did. -G reaches the DUT
  // only in the library build; in the flat build the testbench's instantiation decides: a top
  // Verilator renamed (`top__W4`) was instantiated with parameters of the testbench's own, which
  // slang's elaboration of the same testbench read (the check stage); without them (instances
  // that differ, values that are not integers) no claim is made.
  const topModules = new Set(cov.points.filter((p) => cov.dutInstances.includes(p.hier)).map((p) => p.module));
  const renamed = [...topModules].some((m) => m !== req.top);
  if (renamed && !instanceParams)
    return notRun(
      'the formal engine did not run: the testbench instantiates the design with parameters it could not take (instances that differ, or values that are not integers; give them with -G instead)',
      req.formal!,
    );
  const given = Object.fromEntries((instanceParams ?? []).map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));
  const design = renamed ? { ...req.design, params: given } : library ? req.design : { ...req.design, params: {} };
  try {
    const report = await formalReach(design, req.top, question, { budget: req.formal, signal: req.signal });
    return applyFormal(cov, report);
  } catch (e) {
    if (req.signal?.aborted) throw e;
    return notRun(`the formal engine did not run: ${(e as Error).message}`, req.formal!);
  }
}
