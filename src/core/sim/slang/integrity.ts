// What a candidate testbench does to the design under test, decided on slang's elaborated tree
// (slang_integrity.py): hierarchical writes into the design, force/release/assign on anything in
// it, calls of its tasks and functions, defparam and bind into it, output or ref connections to
// its signals, and every instance of a design module beyond the one under test. Each of these
// reaches coverage without driving the DUT's ports, or scores a configuration nobody asked for, so
// the candidate is refused before anything is compiled, with a reason the model can act on.
// Reading the design's internals stays allowed: checkers do that.
//
// The testbench is untrusted text: slang runs in the jail, seeing the design view, the testbench
// file and its own interpreter, nothing else; the request travels on stdin.
import { dirname, resolve } from 'node:path';
import type { DesignSpec } from '../../design/types.js';
import type { DesignFacts } from '../../design/facts.js';
import { assetPath } from '../../util/assets.js';
import { runBounded, type RunResult } from '../../util/proc.js';
import { toolchainCommand, toolDirsOf, type DesignView, type JailInfo } from '../jail.js';
import type { Diagnostic } from '../result.js';
import { slangPython } from './frontEnd.js';

export type ReachKind =
  'write' | 'force' | 'release' | 'assign' | 'deassign' | 'port' | 'trigger' | 'disable' | 'call' | 'defparam' | 'bind' | 'instance';

/** One place where testbench code changes something of the design's (or instantiates it again). */
export interface Reach {
  kind: ReachKind;
  /** The design symbol reached (hierarchical path), the bind target, or `path (module)` of an instance. */
  target: string;
  file: string | null;
  line: number | null;
  column: number | null;
}

interface ParamValue {
  name: string;
  value: string | null;
  local: boolean;
  type: boolean;
  overridden: boolean;
}

export interface IntegrityReading {
  /** False when the testbench's top could not be elaborated: nothing was judged. */
  ok: boolean;
  slang: string;
  diagnostics: { severity: string; message: string; file: string | null; line: number | null }[];
  violations: Reach[];
  /** The testbench's errors that may hide what it does to the design (slang_integrity.py unjudged_errors). */
  unjudged: { severity: string; message: string; file: string | null; line: number | null }[];
  /** Every instance of the design's top in the testbench's hierarchy, with its parameters. */
  dutInstances: { path: string; params: ParamValue[]; file: string | null; line: number | null; column: number | null }[];
}

export interface IntegrityInput {
  design: DesignSpec;
  /** The design's files as the build reads them (a retry's copies included), in order. */
  designFiles: string[];
  /** The testbench's path (inside the run directory). */
  testbench: string;
  tbTop: string;
  dutTop: string;
  jail: JailInfo;
  view: DesignView;
  memoryLimitMb: number | null;
  timeoutS: number;
  signal?: AbortSignal;
}

export type IntegrityResult = { ok: true; reading: IntegrityReading } | { ok: false; why: string; cancelled?: boolean };

/** Runs slang_integrity.py on the design and the testbench, in the jail. */
export async function readIntegrity(input: IntegrityInput): Promise<IntegrityResult> {
  return (await readIntegrityBatch([input]))[0];
}

/**
 * The readings of several testbenches of one design (a group's members), in one slang process:
 * one request per line, one answer per line, in order. A member the process did not answer (it
 * stopped or timed out on an earlier one) is read again by a process of its own, so a testbench
 * that stops slang costs the others time, never their answer. All inputs share the first one's
 * jail, design view and limits (a group is one design); each testbench file is added to the view.
 */
export async function readIntegrityBatch(inputs: IntegrityInput[]): Promise<IntegrityResult[]> {
  if (inputs.length === 0) return [];
  const first = inputs[0];
  const python = slangPython();
  const script = assetPath('slang_integrity.py', 'sim/slang');
  const facts = assetPath('slang_facts.py', 'sim/slang');
  const extraFiles = [...new Set(inputs.flatMap((i) => i.designFiles))].filter(
    (f) => !first.view.paths.some((p) => f === p || f.startsWith(p + '/')),
  );
  const cmd = toolchainCommand(
    first.jail,
    python,
    ['-I', script, '-'],
    {
      writable: [],
      readOnly: [...first.view.paths, ...extraFiles, ...inputs.map((i) => i.testbench), script, facts],
      hidden: first.view.hidden,
      cwd: dirname(script),
      toolDirs: [...toolDirsOf(python), dirname(dirname(python))],
    },
    { memoryLimitMb: first.memoryLimitMb },
  );
  const r = await runBounded(cmd.file, cmd.args, {
    env: cmd.env,
    input: inputs.map((i) => JSON.stringify(integrityRequest(i)) + '\n').join(''),
    timeoutS: Math.max(...inputs.map((i) => i.timeoutS)),
    signal: first.signal,
    outputLimitBytes: 4 * 1024 * 1024 * inputs.length,
  });
  const lines = r.stdout.split('\n').filter((l) => l.startsWith('{'));
  const whole = r.exitCode === 0 && !r.timedOut && !r.cancelled && lines.length === inputs.length;
  if (inputs.length === 1 || whole) return inputs.map((_, k) => answerOf(r, lines[k], inputs[k].timeoutS, whole));
  // The lines before the one that stopped the process are answers; the rest are read alone.
  return Promise.all(inputs.map((input, k) => (k < lines.length ? answerOf(r, lines[k], input.timeoutS, true) : readIntegrity(input))));
}

/** The request line of one input: the design's files, the testbench, the tops. */
function integrityRequest(input: IntegrityInput): Record<string, unknown> {
  const defines = Object.entries(input.design.defines)
    .filter(([k]) => k !== 'VERILATOR')
    .map(([k, v]) => (v === null ? k : `${k}=${v}`));
  return {
    files: [...input.designFiles, ...input.design.libraryFiles].map((f) => resolve(f)),
    includeDirs: input.design.includeDirs.map((d) => resolve(d)),
    // As the build reads it: Verilator defines VERILATOR.
    defines: [...defines, 'VERILATOR=1'],
    testbench: input.testbench,
    tbTop: input.tbTop,
    dutTop: input.dutTop,
  };
}

/** One answer line as a result; `answered`: the line is this input's (else the process's end says why). */
function answerOf(r: RunResult, line: string | undefined, timeoutS: number, answered: boolean): IntegrityResult {
  if (r.cancelled) return { ok: false, why: 'cancelled', cancelled: true };
  if (!answered || !line) {
    if (r.timedOut) return { ok: false, why: `slang did not finish reading the testbench within ${timeoutS} s` };
    return { ok: false, why: `slang stopped (${r.spawnError ?? r.stderr.trim().split('\n').slice(-1)[0] ?? `exit ${r.exitCode}`})` };
  }
  try {
    return { ok: true, reading: JSON.parse(line) as IntegrityReading };
  } catch (e) {
    return { ok: false, why: `slang's answer could not be read (${(e as Error).message})` };
  }
}

const WHAT: Record<ReachKind, (t: string) => string> = {
  write: (t) => `the testbench writes '${t}', which is inside the design under test (a hierarchical write)`,
  force: (t) => `the testbench forces '${t}', which is inside the design under test`,
  release: (t) => `the testbench releases '${t}', which is inside the design under test`,
  assign: (t) => `the testbench assigns '${t}' procedurally (assign/deassign), and it is inside the design under test`,
  deassign: (t) => `the testbench deassigns '${t}', which is inside the design under test`,
  port: (t) => `the testbench connects '${t}', which is inside the design under test, to an output or ref port: that writes it`,
  trigger: (t) => `the testbench triggers '${t}', an event inside the design under test`,
  disable: (t) => `the testbench disables '${t}', a block or task inside the design under test`,
  call: (t) => `the testbench calls '${t}', a task or function inside the design under test: it may change the design's state`,
  defparam: (t) => `the testbench changes the design's parameter '${t}' with defparam`,
  bind: (t) => `the testbench binds code into '${t}', a module of the design`,
  instance: (t) => `the testbench instantiates a design module besides the one instance under test: ${t}`,
};

/** The code of each kind: one per way of reaching in, so a log can count them. */
const CODE: Record<ReachKind, string> = {
  write: 'CHORUS-HIERWRITE',
  force: 'CHORUS-FORCE',
  release: 'CHORUS-FORCE',
  assign: 'CHORUS-FORCE',
  deassign: 'CHORUS-FORCE',
  port: 'CHORUS-HIERWRITE',
  trigger: 'CHORUS-HIERWRITE',
  disable: 'CHORUS-HIERCALL',
  call: 'CHORUS-HIERCALL',
  defparam: 'CHORUS-DEFPARAM',
  bind: 'CHORUS-BIND',
  instance: 'CHORUS-INSTANCE',
};

function suggestion(kind: ReachKind, dutTop: string): string {
  if (kind === 'instance')
    return `Instantiate '${dutTop}' exactly once and no other module of the design: coverage is measured on that one instance.`;
  if (kind === 'defparam' || kind === 'bind')
    return `Remove the ${kind}: the scored design is '${dutTop}' as written, with the requested parameters.`;
  return `Drive '${dutTop}' through its ports only; a testbench may read the design's internals (checkers do) but never change them.`;
}

/** A refusal of the testbench at the check stage, at a place in a file (line and column 1 where
 * unknown). */
function checkRefusal(
  at: { file: string; line?: number | null; column?: number | null },
  code: string,
  message: string,
  suggestion: string,
): Diagnostic {
  return {
    file: at.file,
    origin: 'testbench',
    line: at.line ?? 1,
    column: at.column ?? 1,
    severity: 'error',
    code,
    message,
    suggestion,
    stage: 'check',
  };
}

/** The elaborated design's reading, as the candidate's diagnostics (refusals) and warnings. */
export function integrityDiagnostics(
  reading: IntegrityReading,
  opts: { tbName: string; tbPath: string; dutTop: string; facts?: DesignFacts | null; requested: Record<string, string> },
): Diagnostic[] {
  const out: Diagnostic[] = [];
  // slang drops what it cannot parse or bind: code it rejected in the testbench was not judged,
  // and Verilator may still build it. The testbench must be code both read.
  for (const d of (reading.unjudged ?? []).slice(0, 3))
    out.push(
      checkRefusal(
        { file: opts.tbName, line: d.line },
        'CHORUS-CHECK',
        `the check cannot judge this code: the SystemVerilog front end (slang) rejects it (${d.message}), so what it does to the design is unknown`,
        'Write it as standard SystemVerilog (IEEE 1800-2017) that every simulator reads.',
      ),
    );
  const at = (file: string | null): string =>
    file === null || file === opts.tbPath ? opts.tbName : (file.split('/').pop() ?? opts.tbName);
  for (const v of reading.violations)
    out.push(
      checkRefusal(
        { file: at(v.file), line: v.line, column: v.column },
        CODE[v.kind] ?? 'CHORUS-REACH',
        WHAT[v.kind]?.(v.target) ?? `the testbench reaches into the design (${v.kind} ${v.target})`,
        suggestion(v.kind, opts.dutTop),
      ),
    );
  // The scored configuration: the requested values, the design's own defaults for the rest.
  const top = opts.facts?.modules.find((m) => m.name === opts.dutTop);
  const dut = reading.dutInstances[0];
  if (top && dut) {
    for (const p of dut.params) {
      if (p.local || !p.overridden) continue;
      const scored = opts.requested[p.name] ?? top.params.find((q) => q.name === p.name)?.value ?? null;
      if (scored === null || p.value === null || sameValue(scored, p.value)) continue;
      out.push(
        checkRefusal(
          { file: at(dut.file), line: dut.line, column: dut.column },
          'CHORUS-PARAM',
          `the testbench instantiates '${opts.dutTop}' with ${p.name}=${p.value}, but the scored configuration has ${p.name}=${scored}: coverage of another configuration does not count`,
          `Instantiate '${opts.dutTop}' with ${p.name}=${scored} (or leave ${p.name} at its default); to score the configuration with ${p.name}=${p.value}, ask for it (-G ${p.name}=${p.value}, or the request's params).`,
        ),
      );
    }
  }
  return out;
}

/** Values as slang prints them, and a requested `-G` value written another way (8, 'd8, 32'h8). */
function sameValue(a: string, b: string): boolean {
  if (a === b) return true;
  const n = (s: string): bigint | null => {
    const m = /^(?:\d*'[sS]?([dDhHbBoO]))?([0-9a-fA-F_]+)$/.exec(s.trim());
    if (!m) return null;
    const base = { d: 10, h: 16, b: 2, o: 8 }[(m[1] ?? 'd').toLowerCase() as 'd'];
    const digits = m[2].replace(/_/g, '');
    try {
      return base === 10 ? BigInt(digits) : BigInt((base === 16 ? '0x' : base === 2 ? '0b' : '0o') + digits);
    } catch {
      return null;
    }
  };
  const x = n(a);
  return x !== null && x === n(b);
}
