// Verilator's messages, compile time and run time, as Diagnostics at 1-based file:line:column.
//   %Error-PINNOTFOUND: tb.sv:8:21: Pin not found: 'clkk'
//                                 : ... Suggested alternative: 'clk'
//      8 |   counter uut (.clkk(clk));
//        |                 ^~~~
//   [25000] %Error: fifo.sv:47: Assertion failed in tb.uut: push while full
//   %Error: chorus: simulation ran out of events ...
import type { Diagnostic, Severity, SimStage } from '../result.js';

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
  const lines = log.split(/\r?\n/);
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
    if (cont && !/^In instance/.test(cont[1]) && !/^note:/.test(cont[1]) && last.message.length < 400) {
      last.message += ` (${cont[1].trim()})`;
    }
  }
  return out;
}

/** Messages that are not about the candidate: the trailing error count, help hints. */
export function isNoise(d: Diagnostic): boolean {
  return /^Exiting due to \d+/.test(d.message);
}
