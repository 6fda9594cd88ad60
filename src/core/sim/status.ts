// The protocol's status names in words a person reads. `--json`, the reward service and the model's
// feedback keep the protocol's names (xrun_failed, imc_report_summary_failed ...); human output
// (the CLI's summaries and verdict lines) says what happened instead.
import type { SimStatus } from './result.js';

const WORDS: Record<SimStatus, string> = {
  success: 'success',
  xrun_failed: 'simulation failed',
  imc_merge_failed: 'coverage merge failed',
  imc_report_summary_failed: 'coverage report failed',
  exception: 'simulator error',
  timeout: 'timed out',
  rejected: 'rejected by the safety check',
  integrity_failed: 'integrity check failed',
};

/** The status in words: `simulation failed` for `xrun_failed`, and so on. */
export function humanStatus(status: SimStatus | string): string {
  return (WORDS as Record<string, string>)[status] ?? status.replace(/_/g, ' ');
}
