// The settings the worker reads once, when it starts: the simulator executables, which reach it as
// its environment (core reads CHORUS_VERILATOR/CHORUS_XRUN/CHORUS_IMC, and keeps the simulator and
// toolchain it built from them for the life of the process). A change to one of them needs a new
// worker; every other setting (the backend, the model, rounds, limits) travels with each request
// and applies to the next run by itself. Pure: no vscode import (the session passes the event's
// affectsConfiguration; test/unit/extension/workerSettings.test.ts).

/** Setting -> the environment variable the worker's core reads for it. */
export const WORKER_START_SETTINGS = [
  { setting: 'chorus.simulator.verilatorPath', env: 'CHORUS_VERILATOR' },
  { setting: 'chorus.simulator.xrunPath', env: 'CHORUS_XRUN' },
  { setting: 'chorus.simulator.imcPath', env: 'CHORUS_IMC' },
] as const;

/** The worker's environment from the settings; `get` reads one by its full name. Empty ones are
 * left out, so core falls back to its default (`verilator` on PATH, ...). */
export function workerEnvFrom(get: (setting: string) => string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const { setting, env: name } of WORKER_START_SETTINGS) {
    const v = get(setting)?.trim();
    if (v) env[name] = v;
  }
  return env;
}

/** The settings the worker reads at start that a configuration change touched (VS Code's
 * `ConfigurationChangeEvent.affectsConfiguration`, which also answers true for a parent section). */
export function changedWorkerSettings(affects: (section: string) => boolean): string[] {
  return WORKER_START_SETTINGS.map((s) => s.setting).filter((s) => affects(s));
}

/**
 * What to do about a worker started with other settings: nothing when none changed; restart now
 * when idle (the new worker starts lazily, on the next request); after the run otherwise, since
 * stopping the worker would kill the run in progress.
 */
export function workerRestartPlan(changed: readonly string[], runActive: boolean): 'none' | 'now' | 'after-run' {
  if (!changed.length) return 'none';
  return runActive ? 'after-run' : 'now';
}
