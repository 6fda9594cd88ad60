// Defaults of a generation run, in a module without imports: the extension host reads them for its
// settings without bundling the engine (the worker process runs that).

/** Refinement rounds after the first generation when the caller names none: 4 attempts in all. */
export const DEFAULT_ROUNDS = 3;
