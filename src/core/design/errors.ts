// Errors about the user's design (not the testbench): they stop the run before any candidate is
// judged, and each one says what is wrong and how to fix it.
import type { Diagnostic } from './diagnostic.js';

export type DesignErrorKind =
  | 'missing-file'
  | 'syntax'
  | 'no-module'
  | 'multiple-tops'
  | 'unknown-top'
  /** A -G override for a parameter the top does not have: `candidates` lists the real ones. */
  | 'unknown-param'
  /** A file that is not Verilog/SystemVerilog (VHDL, binary, empty, not UTF-8). */
  | 'not-verilog'
  | 'missing-package'
  | 'filelist'
  | 'tool'
  /** An `include file that is in none of the include folders (and not found once in the repository). */
  | 'missing-include'
  /** A name found more than once in the repository: `candidates` lists them. */
  | 'ambiguous'
  /** A FuseSoC / Bender manifest the tool could not read (version, core, target). */
  | 'manifest'
  /** The manifest's tool (fusesoc, bender) is not installed. */
  | 'tool-missing';

export class DesignError extends Error {
  constructor(
    readonly kind: DesignErrorKind,
    message: string,
    readonly diagnostics: Diagnostic[] = [],
    /** For multiple-tops: the candidates to choose from with --top; for ambiguous: the paths; for
     * unknown-top: the declared modules; for unknown-param: the top's parameters. */
    readonly candidates: string[] = [],
  ) {
    super(message);
    this.name = 'DesignError';
  }
}
