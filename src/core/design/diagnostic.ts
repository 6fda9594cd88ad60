// A simulator or front-end message at a source position: the design layer reports them (introspection,
// design errors) and the simulator backends above it produce them for every run.

/** Where the run stopped; `success` when every stage passed. */
export type SimStage = 'check' | 'lint' | 'build' | 'run' | 'coverage' | 'success';

export type Severity = 'error' | 'warning' | 'info';

/** One simulator message mapped to a source position (1-based line and column). */
export interface Diagnostic {
  /** Path as the user knows it: the testbench name, or the DUT file path. */
  file: string;
  /** Which side of the run the file belongs to. */
  origin: 'testbench' | 'dut' | 'other';
  line: number;
  column: number;
  endColumn?: number;
  severity: Severity;
  /** Simulator message code, e.g. `PINNOTFOUND`, `WIDTH`, `ASSERT`, `CHORUS-SYSTEM`. */
  code?: string;
  message: string;
  suggestion?: string;
  /** Simulation time for run-time messages (of the first one, when repeats were folded). */
  time?: string;
  /** Repeats folded into this one (same file, line, code and message; run-time messages only):
   * how many times it was printed, absent when once. */
  count?: number;
  /** Simulation time of the last repeat, when folded. */
  lastTime?: string;
  stage: SimStage;
}
