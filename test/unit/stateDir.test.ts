// The state directory of `chorus serve --state-dir`: a restarted instance removes the run folders
// of instances that are no longer running (a SIGKILL leaves them), and never another live one's.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { claimStateDir } from '../../src/core/run/service.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('claimStateDir', () => {
  it("removes dead instances' run folders, keeps live ones, and releases its own", () => {
    const state = mkdtempSync(join(tmpdir(), 'chorus-state-'));
    dirs.push(state);
    // A pid that surely ended: a child that has exited and been reaped.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    mkdirSync(join(state, `tmp-${dead}`, 'chorus-run-x'), { recursive: true });
    writeFileSync(join(state, `tmp-${dead}`, 'chorus-run-x', 'Vtb'), 'x');
    const live = join(state, `tmp-${process.ppid}`);
    mkdirSync(live);
    mkdirSync(join(state, 'answers'));
    const c = claimStateDir(state);
    expect(c.removed).toEqual([`tmp-${dead}`]);
    expect(existsSync(join(state, `tmp-${dead}`))).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(existsSync(join(state, 'answers'))).toBe(true);
    expect(c.scratch).toBe(join(state, `tmp-${process.pid}`));
    expect(existsSync(c.scratch)).toBe(true);
    c.release();
    expect(existsSync(c.scratch)).toBe(false);
  });
});
