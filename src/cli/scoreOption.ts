// `--score paper|legal`, the same for every command that scores runs (sim, generate, refine, eval):
// how a run whose stimulus broke the design's own assertions is scored. The default is the
// project file's `score`, else `paper` (CHORUS eq. 1, as published).
import { SCORE_MODES, type ScoreMode } from '../core/run/simulators.js';

export const SCORE_OPTION = { score: { type: 'string' } } as const;

export const SCORE_HELP = `  --score <mode>        paper | legal (default paper, or chorus.json's "score"): legal makes a run
                        whose stimulus broke the design's own assertions a failed run (reward 0)
`;

/** The score mode to use; throws a usage message for an unknown one. */
export function scoreOption(value: string | undefined, fallback: ScoreMode | undefined = undefined): ScoreMode {
  const v = value ?? fallback ?? 'paper';
  if (!(SCORE_MODES as readonly string[]).includes(v))
    throw new Error(`unknown score mode '${v}' (--score); use ${SCORE_MODES.join(' or ')}`);
  return v as ScoreMode;
}
