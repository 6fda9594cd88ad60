// The report the simulation harness (chorus_main.cpp) writes to fd 3 after the last line of
// testbench code has run: how the run ended, Verilator's own fatal errors, every
// $error/$fatal/assertion site (`unique`/`priority` violations included) with its count and the
// times of its first and last failure, and the coverage database. It is the only source of
// what the host scores: nothing the testbench can write (a coverage.dat, its log) is read for it.
//
//   CHORUS-REPORT 2 <nonce>                   (2: sites carry their last time)
//   end <finish|stop|fatal|signal|no-events|maxtime|oom|terminate|exit>
//   finished <0|1>
//   time <t>                                  (model time units)
//   precision <p>                             (power of ten in seconds)
//   fatal <hex file> <line> <hex message>     (zero or more)
//   site <hex file> <line> <count> <first time> <last time> <stops 0|1>   (zero or more; times in model units)
//   sites-dropped <n>                         (optional)
//   coverage <bytes>                          (or: coverage-error <hex message>)
//   <bytes of coverage.dat>
//   CHORUS-END <nonce>
//
// The nonce came from the host on stdin, read before any testbench code ran: a frame without it,
// or any byte beside the one frame, is an integrity failure of the run.

export type HarnessEnd = 'finish' | 'stop' | 'fatal' | 'signal' | 'no-events' | 'maxtime' | 'oom' | 'terminate' | 'exit';

export interface HarnessSite {
  /** The file as the model names it (the path Verilator compiled). */
  file: string;
  line: number;
  count: number;
  /** Simulation time of the first one, in model units. */
  first: number;
  /** Simulation time of the last one, in model units (>= first). */
  last: number;
  /** A $fatal/$stop: the run ended here. */
  stops: boolean;
}

export interface HarnessReport {
  end: HarnessEnd;
  finished: boolean;
  time: number;
  precision: number;
  /** Verilator's fatal errors, the first being the one that ended the run. */
  fatals: Array<{ file: string; line: number; message: string }>;
  sites: HarnessSite[];
  sitesDropped: number;
  /** The coverage database's text, or null with the harness's reason. */
  coverage: string | null;
  coverageProblem?: string;
}

/** The report format's version: bumped with every change of its fields (chorus_main.cpp writes it). */
export const REPORT_VERSION = 2;

/** `cut`: a frame of this run that stops short (its writer died mid-write), every byte so far well-formed. */
export type ReportReading = { kind: 'none' } | { kind: 'ok'; report: HarnessReport } | { kind: 'forged'; problem: string; cut?: boolean };

const ENDS = new Set<HarnessEnd>(['finish', 'stop', 'fatal', 'signal', 'no-events', 'maxtime', 'oom', 'terminate', 'exit']);

function unhex(s: string): string {
  if (s === '-') return '';
  if (!/^(?:[0-9a-f]{2})*$/.test(s)) throw new Error(`bad hex field '${s.slice(0, 20)}'`);
  return Buffer.from(s, 'hex').toString('utf8');
}

function int(s: string | undefined, what: string): number {
  if (s === undefined || !/^-?\d+$/.test(s)) throw new Error(`bad ${what} '${(s ?? '').slice(0, 20)}'`);
  return Number(s);
}

/**
 * Reads fd 3's bytes. `none`: the harness wrote nothing (it was killed before it could);
 * `forged`: something other than exactly one well-formed frame with this run's nonce.
 */
export function readHarnessReport(bytes: Buffer | undefined, nonce: string, overflow = false): ReportReading {
  if (!bytes || bytes.length === 0) return { kind: 'none' };
  const forged = (problem: string): ReportReading => ({ kind: 'forged', problem });
  if (overflow) return forged('the report channel carried more than its limit');
  const head = Buffer.from(`CHORUS-REPORT ${REPORT_VERSION} ${nonce}\n`);
  if (!bytes.subarray(0, head.length).equals(head)) return forged('the report channel does not start with the harness frame of this run');
  const tail = Buffer.from(`\nCHORUS-END ${nonce}\n`);
  let at = head.length;
  const report: HarnessReport = {
    end: 'exit',
    finished: false,
    time: 0,
    precision: -12,
    fatals: [],
    sites: [],
    sitesDropped: 0,
    coverage: null,
  };
  try {
    for (;;) {
      const nl = bytes.indexOf(10, at);
      if (nl < 0) return { kind: 'forged', problem: 'the harness frame is cut short', cut: true };
      const line = bytes.subarray(at, nl).toString('utf8');
      at = nl + 1;
      const [key, ...f] = line.split(' ');
      if (key === 'end') {
        if (!ENDS.has(f[0] as HarnessEnd)) throw new Error(`unknown end '${f[0]}'`);
        report.end = f[0] as HarnessEnd;
      } else if (key === 'finished') report.finished = f[0] === '1';
      else if (key === 'time') report.time = int(f[0], 'time');
      else if (key === 'precision') report.precision = int(f[0], 'precision');
      else if (key === 'fatal') report.fatals.push({ file: unhex(f[0]), line: int(f[1], 'line'), message: unhex(f[2] ?? '') });
      else if (key === 'site') {
        if (f.length !== 6) throw new Error(`a site of ${f.length} fields`);
        if (f[5] !== '0' && f[5] !== '1') throw new Error(`bad stops '${f[5].slice(0, 20)}'`);
        const site: HarnessSite = {
          file: unhex(f[0]),
          line: int(f[1], 'line'),
          count: int(f[2], 'count'),
          first: int(f[3], 'time'),
          last: int(f[4], 'time'),
          stops: f[5] === '1',
        };
        if (site.count < 1 || site.last < site.first) throw new Error('a site whose count or times do not add up');
        report.sites.push(site);
      } else if (key === 'sites-dropped') report.sitesDropped = int(f[0], 'count');
      else if (key === 'coverage-error') {
        report.coverageProblem = unhex(f[0] ?? '-');
        break;
      } else if (key === 'coverage') {
        const n = int(f[0], 'size');
        if (at + n > bytes.length) return { kind: 'forged', problem: 'the harness frame is cut short', cut: true };
        report.coverage = bytes.subarray(at, at + n).toString('utf8');
        at += n;
        break;
      } else throw new Error(`unknown field '${key.slice(0, 20)}'`);
    }
  } catch (e) {
    return forged(`the harness frame is malformed (${(e as Error).message})`);
  }
  if (!bytes.subarray(at).equals(tail)) return forged('bytes beside the harness frame on the report channel');
  return { kind: 'ok', report };
}
