// bench/ip's reset and clock: what the engine's own front end (slang, from use: design/facts.ts)
// says the design's reset is, so the rebuild can report how much of the run the design spent out
// of reset. One reading of the design, the product's; the bench keeps no reset finder of its own.
import { isAbsolute, resolve } from 'node:path';
import { designFacts } from '../../src/core/run/design.js';
import type { CorpusBlock } from './corpus.js';

export interface ResetGuess {
  /** Top input port. */
  port: string;
  activeLow: boolean;
  /** Top input clocking the design (the one most blocks use). */
  clock: string;
  /** Blocks and properties that use it as a reset. */
  votes: number;
}

const split = (d: string): [string, string | null] => {
  const i = d.indexOf('=');
  return i < 0 ? [d, null] : [d.slice(0, i), d.slice(i + 1)];
};

/** The block's reset and clock from the front end's facts, or null (no reset, or slang failed). */
export async function findReset(block: CorpusBlock, cwd: string): Promise<ResetGuess | null> {
  const abs = (p: string): string => (isAbsolute(p) ? p : resolve(cwd, p));
  try {
    const facts = await designFacts({
      files: block.files.map(abs),
      libraryFiles: [],
      includeDirs: block.includeDirs.map(abs),
      defines: Object.fromEntries(block.defines.map(split)),
      params: Object.fromEntries(block.params.map((p) => split(p) as [string, string])),
      top: block.top,
    });
    const reset = [...facts.resets].sort((a, b) => b.uses - a.uses)[0];
    const clock = [...facts.clocks].sort((a, b) => b.uses - a.uses)[0];
    return reset && clock ? { port: reset.signal, activeLow: reset.activeLow, clock: clock.signal, votes: reset.uses } : null;
  } catch {
    return null;
  }
}
