// Verilator's messages, compile time and run time, as Diagnostics at 1-based file:line:column.
//   %Error-PINNOTFOUND: tb.sv:8:21: Pin not found: 'clkk'
//                                 : ... Suggested alternative: 'clk'
//      8 |   counter uut (.clkk(clk));
//        |                 ^~~~
//   [25000] %Error: fifo.sv:47: Assertion failed in tb.uut: push while full
//   %Error: chorus: simulation ran out of events ...
import type { Diagnostic, Severity, SimStage } from '../result.js';
import { safeText } from '../../util/untrusted.js';

const COMPILE = /^%(Error|Warning|Info)(?:-([A-Z0-9_]+))?: ([^:\s][^:]*):(\d+):(\d+): (.*)$/;
const RUNTIME = /^(?:\[(\d+(?:\.\d+)?)\] )?%(Error|Warning|Fatal|Info)(?:-([A-Z0-9_]+))?: ([^:\s][^:]*):(\d+):(?: (.*))?$/;
const UNDERLINE = /^\s*\|\s*(\^~*)/;
const ECHO = /^\s*(\d+)\s*\|/;

export interface FileClassifier {
  /** Maps a path as the simulator printed it to the path the user knows and its origin. */
  (file: string): { file: string; origin: Diagnostic['origin'] };
}

function severityOf(word: string): Severity {
  if (word === 'Warning') return 'warning';
  if (word === 'Info') return 'info';
  return 'error';
}

export function parseVerilatorMessages(log: string, classify: FileClassifier, stage: SimStage): Diagnostic[] {
  // Text-safe first (util/untrusted.ts): a CR or a line separator the testbench prints inside an
  // $error message would otherwise end the line for `.` and hide the message from the diagnostics.
  const lines = safeText(log).split('\n');
  const out: Diagnostic[] = [];
  let last: Diagnostic | undefined;
  let echoLine = -1;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i];
    const c = COMPILE.exec(text);
    if (c) {
      const where = classify(c[3]);
      last = {
        file: where.file,
        origin: where.origin,
        line: Number(c[4]),
        column: Number(c[5]),
        severity: severityOf(c[1]),
        code: c[2],
        message: c[6].trim(),
        stage,
      };
      echoLine = -1;
      out.push(last);
      continue;
    }
    const r = RUNTIME.exec(text);
    if (r && !/^\d+:\d+:/.test(r[6] ?? '')) {
      const where = classify(r[4]);
      const word = r[2];
      last = {
        file: where.file,
        origin: where.origin,
        line: Number(r[5]),
        column: 1,
        severity: word === 'Fatal' ? 'error' : severityOf(word),
        code: r[3] ?? (word === 'Fatal' ? 'FATAL' : /Assertion failed/.test(r[6] ?? '') ? 'ASSERT' : undefined),
        message: (r[6] ?? '').trim() || `$${word.toLowerCase()}`,
        time: r[1],
        stage,
      };
      echoLine = -1;
      out.push(last);
      continue;
    }
    if (!last) continue;
    const sugg = /Suggested alternative: '([^']+)'/.exec(text);
    if (sugg) {
      last.suggestion = sugg[1];
      continue;
    }
    const echo = ECHO.exec(text);
    if (echo && Number(echo[1]) === last.line) {
      echoLine = i;
      continue;
    }
    const u = UNDERLINE.exec(text);
    if (u && echoLine === i - 1 && last.endColumn === undefined) {
      last.endColumn = last.column + u[1].length;
      continue;
    }
    // Continuation lines (": ... In instance tb") add context to the message.
    const cont = /^\s+: \.\.\. (.*)$/.exec(text);
    // (Current releases add "Location of instance's module declaration" pointers: not context.)
    if (
      cont &&
      !/^In instance/.test(cont[1]) &&
      !/^note:/.test(cont[1]) &&
      !/^Location of instance's module declaration/.test(cont[1]) &&
      last.message.length < 400
    ) {
      last.message += ` (${cont[1].trim()})`;
    }
  }
  return out;
}

/** Messages that are not about the candidate: the trailing error count, help hints. */
export function isNoise(d: Diagnostic): boolean {
  return /^Exiting due to \d+/.test(d.message);
}

/**
 * Verilator output that is the tool's problem, never the design's or the testbench's: an option
 * this version refuses, its own files missing, its Perl wrapper broken. Returns what went wrong
 * in one line, or undefined when the output is about the sources.
 */
export function toolProblem(log: string): string | undefined {
  const opt = /%Error: Invalid option: (\S+)/.exec(log);
  if (opt) return `this Verilator does not accept the option ${opt[1]} (options changed between Verilator versions)`;
  const together = /%Error: The following cannot be used together: ([^\n]+?)\.?(?: Suggest|\n|$)/.exec(log);
  if (together) return `this Verilator refuses the option combination ${together[1].trim()}`;
  const own = /%Error:[^\n]*?(verilated_std(?:_waiver)?\.(?:sv|vlt)|verilated\.v)\b[^\n]*/.exec(log);
  if (own && /not found|Cannot find|Cannot open|No such file/i.test(own[0])) return `its own file ${own[1]} is missing (${own[0].trim()})`;
  const perl = /Can't locate \S+ in @INC[^\n]*/.exec(log);
  if (perl) return `its Perl wrapper cannot start: ${perl[0].slice(0, 200)}`;
  const bin = /[^\n]*verilator_bin(?:_dbg)?[^\n]*(?:No such file|not found|Permission denied|cannot execute)[^\n]*/i.exec(log);
  if (bin) return `its executable verilator_bin cannot run: ${bin[0].trim()}`;
  return undefined;
}

/** Signals a tool dies of when it crashes (not SIGKILL: the OOM killer or an operator; not SIGTERM:
 * our own timeout), and the exit codes a wrapper (bwrap, a shell) turns them into. */
const CRASH_SIGNALS = new Set(['SIGSEGV', 'SIGABRT', 'SIGBUS', 'SIGILL', 'SIGFPE']);
const CRASH_CODES = new Set([132, 134, 135, 136, 139]);

/** Where and what a crash was, for its verdict (backend.ts crashVerdict). */
export interface ToolCrash {
  message: string;
  /** The source position the tool named, when it named one. */
  file?: string;
  line?: number;
  column?: number;
}

/**
 * A tool that crashed on this input: Verilator's internal errors (a V3Width, V3LinkDot or
 * V3Delayed assertion on odd but legal code), g++'s internal compiler errors, or death by a crash
 * signal. Run again, the same input crashes again: that is the candidate's verdict (reward 0),
 * not a service failure (backend.ts retries once to tell the two apart).
 */
export function toolCrash(r: { all: string; exitCode: number | null; signal: string | null }, what: string): ToolCrash | undefined {
  const internal = /%Error: Internal Error: (?:([^\s:]+):(\d+):(\d+): )?([^\n]+)/.exec(r.all);
  if (internal)
    return {
      message: `${what} crashed with an internal error on this code (${internal[4].trim().slice(0, 300)}): a bug of this Verilator version that the code triggers`,
      ...(internal[1] ? { file: internal[1], line: Number(internal[2]), column: Number(internal[3]) } : {}),
    };
  const ice = /([^\s:]+):(\d+):(?:(\d+):)? internal compiler error: ([^\n]+)/.exec(r.all);
  if (ice) return { message: `${what} crashed with an internal compiler error (${ice[4].trim().slice(0, 200)})` };
  if ((r.signal && CRASH_SIGNALS.has(r.signal)) || (r.exitCode !== null && CRASH_CODES.has(r.exitCode)))
    return { message: `${what} crashed (${r.signal ?? `exit ${r.exitCode}, a crash signal`}) on this code` };
  return undefined;
}

/**
 * C++ compiler output that is the toolchain's problem, not the generated model's: a runtime
 * header missing (an incomplete Verilator installation or a wrong VERILATOR_ROOT), an option the
 * compiler does not know, a missing linker library or compiler part.
 */
export function cxxToolProblem(log: string): string | undefined {
  const header = /fatal error: ((?:verilated|verilatedos|svdpi|vltstd)[\w./-]*\.h): No such file or directory/.exec(log);
  if (header) return `the runtime header ${header[1]} is missing from the Verilator installation's include folder`;
  const opt = /(?:unrecognized|unknown) (?:command[- ]line )?option '([^']+)'/.exec(log);
  if (opt) return `the C++ compiler does not know the option ${opt[1]} (it is too old, or CXX names another compiler)`;
  const lib = /cannot find -l(\S+)/.exec(log);
  if (lib) return `the linker cannot find the library lib${lib[1]} (install it, e.g. sudo apt-get install g++)`;
  const part = /cannot execute '([^']+)'|error trying to exec '([^']+)'/.exec(log);
  if (part) return `the C++ compiler is incomplete: it cannot run ${part[1] ?? part[2]}`;
  return undefined;
}

/** g++'s forms: `file:line[:col]: error: ...`, `file: In function ...`, `In file included from file:line`. */
const CXX = /^(?:In file included from|\s+from)? ?([^\s:%][^:]*):(?:(\d+)(?::(\d+))?[:,]|( In ))/;

/**
 * Verilator quotes the source of whatever file a message is about (the line, an underline, the
 * offending token), and so does g++ (`cxx`: its own message forms, for the C++ compile of a design
 * whose `$c` includes a host file). For a file that is neither the testbench's nor the design's nor
 * the toolchain's (the static check and the jail keep such files out; this is the last layer), keep
 * only the position: the message text and the quoted lines are withheld.
 */
export function withholdForeignSource(log: string, allowed: (file: string) => boolean, opts: { cxx?: boolean } = {}): string {
  const out: string[] = [];
  let hiding = false;
  for (const text of log.split('\n')) {
    const c = COMPILE.exec(text);
    const r = c ? null : RUNTIME.exec(text);
    const x = c || r || !opts.cxx ? null : CXX.exec(text);
    const file = c?.[3] ?? (r && !/^\d+:\d+:/.test(r[6] ?? '') ? r[4] : undefined) ?? x?.[1];
    if (file !== undefined) {
      hiding = !allowed(file);
      if (hiding) {
        if (x) {
          out.push(`${x[1]}${x[2] ? `:${x[2]}` : ''}: [text withheld: the file is not part of the testbench or the design]`);
          continue;
        }
        const where = c ? `${c[3]}:${c[4]}:${c[5]}` : `${r![4]}:${r![5]}`;
        out.push(
          `%${c ? c[1] : r![2]}${(c ? c[2] : r![3]) ? '-' + (c ? c[2] : r![3]) : ''}: ${where}: [text withheld: the file is not part of the testbench or the design]`,
        );
        continue;
      }
    } else if (hiding && (/^\s/.test(text) || text === '')) continue;
    else hiding = false;
    out.push(text);
  }
  return out.join('\n');
}

/**
 * The model's combinational logic never settled: 5.006 prints `%Error: tb.sv:5: Active region did
 * not converge.`, current releases `%Error-DIDNOTCONVERGE: tb.sv:5: Active region did not converge
 * after '--converge-limit' of 10000 tries` (and exit differently). Either way it names the
 * testbench's top module, but the loop is in the design.
 */
export function didNotConverge(log: string): { region: string; limit: number | null } | undefined {
  const m = /%Error(?:-DIDNOTCONVERGE)?: [^\n]*?(\w+) region did not converge(?: after '--converge-limit' of (\d+) tries)?/.exec(log);
  return m ? { region: m[1], limit: m[2] ? Number(m[2]) : null } : undefined;
}

/** The signals Verilator's UNOPTFLAT/UNOPT warnings name as circular, below the DUT instance. */
export function loopSignals(diags: Diagnostic[]): Array<{ name: string; at: Diagnostic }> {
  const out: Array<{ name: string; at: Diagnostic }> = [];
  for (const d of diags) {
    if (d.code !== 'UNOPTFLAT' && d.code !== 'UNOPT') continue;
    const m = /'([^']+)'/.exec(d.message);
    if (!m) continue;
    const parts = m[1].split('.');
    // `tb.uut.next_count` -> `next_count`; `restoring_division.next_count` (no testbench) likewise.
    const name = parts.length > 2 ? parts.slice(2).join('.') : parts[parts.length - 1];
    if (!out.some((o) => o.name === name)) out.push({ name, at: d });
  }
  return out;
}

/** Verilator control file asking to split each looping variable (cures loops through bits of one vector). */
export function splitVarConfig(signals: string[]): string {
  const vars = [...new Set(signals.map((s) => s.split('.').pop()!.replace(/\[.*$/, '')))];
  return '`verilator_config\n' + vars.map((v) => `split_var -module "*" -var "${v}"\n`).join('');
}

/** At most this many distinct run-time messages are kept once repeats are folded. */
export const MAX_FOLDED_DIAGNOSTICS = 1000;

/**
 * Repeats of one message folded into one diagnostic: same file, line, code, severity, origin and
 * message (the `[time]` prefix is already apart, in `time`), with `count` and the first and last
 * time. Order is each message's first appearance. At most `max` distinct messages are kept; the
 * rest are counted in one closing `CHORUS-FOLDED` info. A message printed once is unchanged.
 */
export function foldRepeats(diags: readonly Diagnostic[], max = MAX_FOLDED_DIAGNOSTICS): Diagnostic[] {
  const byKey = new Map<string, Diagnostic>();
  const out: Diagnostic[] = [];
  let dropped = 0;
  let droppedDistinct = 0;
  const dropKeys = new Set<string>();
  for (const d of diags) {
    const key = [d.file, d.line, d.column, d.code ?? '', d.severity, d.origin, d.stage, d.message].join('\0');
    const seen = byKey.get(key);
    if (seen) {
      seen.count = (seen.count ?? 1) + (d.count ?? 1); // a folded entry carries its repeats
      if (d.time !== undefined) seen.lastTime = d.time;
      continue;
    }
    if (out.length >= max) {
      dropped++;
      if (!dropKeys.has(key) && dropKeys.size < 100000) {
        dropKeys.add(key);
        droppedDistinct++;
      }
      continue;
    }
    const copy = { ...d };
    byKey.set(key, copy);
    out.push(copy);
  }
  if (dropped)
    out.push({
      file: '',
      origin: 'other',
      line: 1,
      column: 1,
      severity: 'info',
      code: 'CHORUS-FOLDED',
      message: `${dropped} more run-time message${dropped === 1 ? '' : 's'} (${droppedDistinct}${droppedDistinct >= 100000 ? '+' : ''} distinct) not kept: the record keeps the first ${max} distinct ones`,
      stage: 'run',
    });
  return out;
}
