// What a user brings: RTL files and the options to compile them, independent of any simulator.
import type { DesignFacts } from './facts.js';

/** A design as a simulator needs it. Paths are absolute. */
export interface DesignSpec {
  /** Source files in compile order (packages first; see orderFiles). */
  files: string[];
  /** `-v` library files: modules used only when referenced. */
  libraryFiles: string[];
  includeDirs: string[];
  /** `+define+NAME=VALUE` / `-D NAME[=VALUE]`; null for a define without a value. */
  defines: Record<string, string | null>;
  /** Top-level parameter overrides (`-G NAME=VALUE`). */
  params: Record<string, string>;
  /** The DUT top module; required when the files hold several candidates. */
  top?: string;
  /** Pass-through Verilator options (`--verilator-arg`, chorus.json "verilatorArgs"), already
   * checked against the allowlist (design/verilatorArgs.ts): given to every Verilator pass. */
  verilatorArgs?: string[];
}

export function emptyDesign(): DesignSpec {
  return { files: [], libraryFiles: [], includeDirs: [], defines: {}, params: {} };
}

/** The project file (`chorus.json` beside the design): paths relative to its folder. Read and
 * written by project.ts; type, check and media/chorus.schema.json come from projectSchema.ts. */
export type { ProjectFile } from './projectSchema.js';

/** A testbench is just text with a file name: it usually comes from a model, not the disk. */
export interface TestbenchSource {
  name: string;
  content: string;
}

export interface PortInfo {
  name: string;
  direction: 'input' | 'output' | 'inout' | 'ref';
  /** Total packed width in bits (1 for a scalar); for an unpacked array, the width of one element. */
  width: number;
  /** Packed dimensions, outermost first, as [msb, lsb]. */
  packedDims: Array<[number, number]>;
  /** Unpacked dimensions, outermost first, as [left, right]. */
  unpackedDims: Array<[number, number]>;
  signed: boolean;
  /** The declared type, e.g. `logic`, `bus_pkg::req_t`, `op_t`. */
  typeName: string;
  kind: 'basic' | 'struct' | 'union' | 'enum' | 'other';
  /** Legal values for enum ports, in declaration order. */
  enumValues?: Array<{ name: string; value: string }>;
  /** Struct/union members for packed aggregate ports, MSB first. */
  members?: Array<{ name: string; width: number }>;
  line: number;
}

export interface ParamInfo {
  name: string;
  /** Elaborated value as Verilator prints it, e.g. `32'sh8`; null for a type parameter. */
  value: string | null;
  isType: boolean;
  /** Local parameters cannot be overridden. */
  local: boolean;
}

export interface ModuleInfo {
  name: string;
  file: string;
  line: number;
  ports: PortInfo[];
  params: ParamInfo[];
  /** Names of modules this one instantiates. */
  instantiates: string[];
  /** Signals used as edges in sensitivity lists (`posedge clk`, `negedge rst_n`). */
  edges: Record<string, Array<'pos' | 'neg'>>;
  /** Constants the design compares signals against (`if (op == 3'd5)`, `case (state) 4'h2:`),
   * by signal: the values a stimulus generator should try to hit. */
  comparisons: Record<string, string[]>;
}

export interface DesignInfo {
  top: string;
  /** Top-level modules the front end found (more than one means `--top` is needed). */
  topCandidates: string[];
  modules: ModuleInfo[];
  /** Files the front end actually read (including `include`d ones). */
  files: string[];
  warnings: string[];
  /** What the design means, from the slang front end (design/facts.ts): assertions, clocks and
   * resets from use. Absent when slang could not elaborate the design (a warning says why). */
  facts?: DesignFacts;
}
