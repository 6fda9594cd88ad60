// Errors about the user's design (not the testbench): they stop the run before any candidate is
// judged, and each one says what is wrong and how to fix it.
import type { Diagnostic } from '../sim/result.js';

export type DesignErrorKind =
  | 'missing-file'
  | 'syntax'
  | 'no-module'
  | 'multiple-tops'
  | 'unknown-top'
  | 'missing-package'
  | 'filelist'
  | 'tool';

export class DesignError extends Error {
  constructor(
    readonly kind: DesignErrorKind,
    message: string,
    readonly diagnostics: Diagnostic[] = [],
    /** For multiple-tops: the candidates to choose from with --top. */
    readonly candidates: string[] = [],
  ) {
    super(message);
    this.name = 'DesignError';
  }
}
