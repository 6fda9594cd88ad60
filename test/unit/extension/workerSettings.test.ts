// Which configuration changes restart the editor's worker, and when: the simulator paths (read once,
// as the worker's environment) do; the rest travels with each request and does not. Checked against
// package.json, so that a new setting the worker reads at start cannot be forgotten here.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { changedWorkerSettings, workerEnvFrom, workerRestartPlan, WORKER_START_SETTINGS } from '../../../src/extension/worker/settings.js';
import { repoRoot } from '../../helpers.js';

/** VS Code's affectsConfiguration for a change of `changed`: the setting itself or a parent section. */
const affects =
  (...changed: string[]) =>
  (section: string): boolean =>
    changed.some((c) => c === section || c.startsWith(`${section}.`) || section.startsWith(`${c}.`));

const contributed = (): string[] => {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'));
  const conf = Array.isArray(pkg.contributes.configuration) ? pkg.contributes.configuration : [pkg.contributes.configuration];
  return conf.flatMap((c: { properties: Record<string, unknown> }) => Object.keys(c.properties));
};

describe('worker restart on a settings change', () => {
  it('restarts for a simulator path, not for settings that travel with each request', () => {
    for (const s of ['chorus.simulator.verilatorPath', 'chorus.simulator.xrunPath', 'chorus.simulator.imcPath'])
      expect(changedWorkerSettings(affects(s))).toEqual([s]);
    for (const s of [
      'chorus.simulator.backend',
      'chorus.simulator.timeoutSeconds',
      'chorus.model.source',
      'chorus.model.localPath',
      'chorus.model.kvCache', // travels in the ModelConfig: the held model reloads, the worker stays
      'chorus.generation.rounds',
      'editor.fontSize',
    ])
      expect(changedWorkerSettings(affects(s)), s).toEqual([]);
  });

  it('takes every path when a whole section changes (settings.json edited, a profile switched)', () => {
    expect(changedWorkerSettings(affects('chorus'))).toHaveLength(3);
    expect(changedWorkerSettings(affects('chorus.simulator'))).toHaveLength(3);
  });

  it('restarts now when idle and after the run when one is in progress', () => {
    expect(workerRestartPlan([], false)).toBe('none');
    expect(workerRestartPlan([], true)).toBe('none');
    expect(workerRestartPlan(['chorus.simulator.verilatorPath'], false)).toBe('now');
    expect(workerRestartPlan(['chorus.simulator.verilatorPath'], true)).toBe('after-run');
  });

  it('builds the environment the worker starts with from the same list', () => {
    const values: Record<string, string> = {
      'chorus.simulator.verilatorPath': ' /opt/v/bin/verilator ',
      'chorus.simulator.xrunPath': '',
      'chorus.simulator.imcPath': '/cad/imc',
    };
    expect(workerEnvFrom((s) => values[s])).toEqual({ CHORUS_VERILATOR: '/opt/v/bin/verilator', CHORUS_IMC: '/cad/imc' });
  });

  it('lists only settings that package.json contributes, and every contributed executable path', () => {
    const all = contributed();
    for (const { setting } of WORKER_START_SETTINGS) expect(all).toContain(setting);
    const paths = all.filter((s) => /^chorus\.simulator\..*Path$/.test(s));
    expect(WORKER_START_SETTINGS.map((s) => s.setting).sort()).toEqual(paths.sort());
  });
});
