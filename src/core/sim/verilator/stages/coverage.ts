// Stage "read coverage": the coverage database from the harness report only (failed and timed-out
// runs report too). A coverage.dat in the run directory is the testbench's own file and is never
// read. The database is the simulation's word, so it is checked before anything is opened on it:
// every point must name a file the host resolved before the build (the testbench, the design, the
// toolchain's own), or the run's integrity fails; only design files are read, for the uncovered
// lines' text and the 2-state analysis (files.ts readDesignFile).
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Diagnostic } from '../../result.js';
import { parseVerilatorCoverage } from '../../../coverage/verilatorDat.js';
import type { CoveragePoint } from '../../../coverage/model.js';
import { analyzeCoverage, type DutCoverage } from '../../../coverage/analyze.js';
import type { DutLibrary } from '../dutLibrary.js';
import { type Candidate, type Ending, integrityFailure } from './candidate.js';
import type { FileRoles } from './files.js';

/** Where a kept run directory holds the database the host received. */
export function coveragePath(runDir: string): string {
  return join(runDir, 'chorus-coverage.dat');
}

/**
 * Kept runs (keepRunDir) get the database the host received, written by the host after the run.
 * Whatever the testbench left under that name goes first; 'wx' never follows a link.
 */
export function keepCoverage(c: Candidate, runDir: string, covText: string): void {
  const covPath = coveragePath(runDir);
  if (c.req.keepRunDir && covText) {
    rmSync(covPath, { recursive: true, force: true });
    writeFileSync(covPath, covText, { flag: 'wx' });
  }
}

export interface CoverageInput {
  /** The database's text, from the harness report. */
  covText: string;
  /** The DUT library the candidate was built against, if any: its wrapper's points are not the DUT's. */
  lib?: DutLibrary;
  files: FileRoles;
  /** For an integrity failure's record: the lint warnings and the run's log. */
  warnings: Diagnostic[];
  log: string;
}

/**
 * The DUT's coverage from the database: an integrity failure (Ending) when a point names a file
 * that is neither the testbench's, the design's nor the toolchain's; that file is never opened.
 */
export function readCoverage(c: Candidate, input: CoverageInput): Ending | DutCoverage {
  const { req } = c;
  const { files, lib } = input;
  const points = parseVerilatorCoverage(input.covText);
  if (lib) foldLibraryLevel(points, req.top);
  const wrapper = lib?.wrapper;
  // Every point must name a file the host resolved before the build (the testbench, the
  // design, the toolchain's own): any other is never opened and fails the run's integrity.
  const foreign = [...new Set(points.map((p) => p.file).filter((f) => f && f !== wrapper && !files.knownFile(f)))];
  if (foreign.length)
    return integrityFailure(
      c.tbName,
      `the coverage database names ${foreign.length} file${foreign.length > 1 ? 's' : ''} that ${foreign.length > 1 ? 'are' : 'is'} neither the testbench's nor the design's (${foreign
        .slice(0, 3)
        .map((f) => `'${f.slice(0, 120)}'`)
        .join(', ')}); ${foreign.length > 1 ? 'they were' : 'it was'} not opened`,
      input.warnings,
      input.log,
    );
  return analyzeCoverage(points, {
    isDutFile: (f) => f !== wrapper && files.classify(f).origin === 'dut',
    top: req.top,
    waivers: req.waivers,
    readSource: (f) => (f !== wrapper && files.classify(f).origin === 'dut' ? files.readDesignFile(f) : undefined),
  });
}

/**
 * In library mode the DUT model sits one level below its wrapper instance (`tb.uut.counter`);
 * fold that level away so paths read as in a flat build (`tb.uut`).
 */
export function foldLibraryLevel(points: CoveragePoint[], top: string): void {
  const heads = [...new Set(points.filter((p) => p.module === top && p.hier.split('.').pop() === top).map((p) => p.hier))];
  const shallow = heads.filter((h) => !heads.some((o) => o !== h && h.startsWith(o + '.')));
  for (const p of points) {
    const head = shallow.find((h) => p.hier === h || p.hier.startsWith(h + '.'));
    if (head) p.hier = head.slice(0, head.length - top.length - 1) + p.hier.slice(head.length);
  }
}
