// SIGTERM ends a command the way Ctrl-C does: the work under way is cancelled (the simulation's
// processes are killed and its scratch folder removed by the pipeline's own cleanup), then the
// command exits 143. A second SIGTERM does not wait: the scratch folders still tracked are removed
// and the process exits at once. (The frame in command.ts handles SIGINT; SIGTERM is handled here
// so that a killed run leaves nothing in the temporary folder.)
import { removeTrackedScratch } from '../core/run/runFolder.js';

export const EXIT_TERMINATED = 128 + 15;

export interface Termination {
  /** Fires on the frame's signal (Ctrl-C) or on SIGTERM. */
  signal: AbortSignal;
  /** True once SIGTERM arrived. */
  terminated(): boolean;
  dispose(): void;
}

export function onTermination(frame: AbortSignal): Termination {
  const controller = new AbortController();
  let got = false;
  const on = (): void => {
    if (got) {
      removeTrackedScratch();
      process.exit(EXIT_TERMINATED);
    }
    got = true;
    controller.abort();
  };
  process.on('SIGTERM', on);
  return {
    signal: AbortSignal.any([frame, controller.signal]),
    terminated: () => got,
    dispose: () => process.removeListener('SIGTERM', on),
  };
}

/** Runs `body` with SIGTERM handled: 143 when it arrived, whatever the body returned or threw. */
export async function terminable(frame: AbortSignal, body: (signal: AbortSignal) => Promise<number>): Promise<number> {
  const t = onTermination(frame);
  try {
    const code = await body(t.signal);
    return t.terminated() ? EXIT_TERMINATED : code;
  } catch (e) {
    if (t.terminated()) return EXIT_TERMINATED;
    throw e;
  } finally {
    t.dispose();
  }
}
