// Scratch folders that must not outlive the process: a run ended by SIGTERM or SIGINT (the front
// end turns the signal into an exit) removes them on the way out, as a normal end does. The
// pipeline removes its folder itself when it finishes and then untracks it; whatever is still
// tracked when the process exits is removed here, synchronously (an `exit` handler cannot wait).
import { rmSync } from 'node:fs';

const tracked = new Set<string>();
let installed = false;

function removeAll(): void {
  for (const dir of tracked) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort at exit
    }
  }
  tracked.clear();
}

/** Removes `dir` at process exit unless untracked first. */
export function trackScratch(dir: string): void {
  tracked.add(dir);
  if (!installed) {
    installed = true;
    process.on('exit', removeAll);
  }
}

/** The caller removed (or keeps) `dir` itself. */
export function untrackScratch(dir: string): void {
  tracked.delete(dir);
}

/** Removes every tracked folder now (a signal handler that is about to end the process). */
export function removeTrackedScratch(): void {
  removeAll();
}
