// `chorus sim` as a user runs it: exit codes, the human summary, --json, waivers, lcov, file lists.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { examples, fixtures, repoRoot, scratchDir, simulateFiles } from '../helpers.js';
import { figures } from '../../src/core/coverage/model.js';

const cli = join(repoRoot, 'dist', 'cli.js');
const counter = join(examples, 'counter', 'counter.sv');
const run = (args: string[], cwd = repoRoot) => execa(process.execPath, [cli, ...args], { cwd, reject: false });

describe('chorus sim', () => {
  it('prints a human summary and exits 0 when the testbench ran', async () => {
    const r = await run(['sim', '--top', 'counter', '--tb', join(examples, 'counter', 'tb_counter_weak.sv'), counter]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/status: success/);
    expect(r.stdout).toMatch(/coverage of counter: 35\.39% overall/);
    expect(r.stdout).toMatch(/block {2}57\.14% \(4\/7\)/);
    expect(r.stdout).toMatch(/toggle 13\.64% \(3\/22\)/);
    expect(r.stdout).toMatch(/counter\.sv:19 \[line elsif\]/);
  });

  it('--json prints the result record', async () => {
    const r = await run(['sim', '--json', '--tb', join(examples, 'counter', 'tb_counter.sv'), counter]);
    expect(r.exitCode).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.status).toBe('success');
    expect(j.returncode).toBe(0);
    expect(j.reward).toBe(2);
    expect(j.stage).toBe('success');
    expect(j.cov_info.summary[0]).toMatchObject({ name: 'counter', level: 0, 'Overall Average': 1 });
    expect(j.coverage.waived.tallies.block).toEqual({ covered: 7, total: 7 });
    expect(Array.isArray(j.diagnostics)).toBe(true);
    expect(j.timings.total).toBeGreaterThan(0);
    expect(j.protection.jail).toBe('bubblewrap');
  });

  it('exits 1 with positioned errors when the testbench does not compile', async () => {
    const dir = scratchDir('chorus-cli-');
    const tb = join(dir, 'tb_bad.sv');
    writeFileSync(tb, "module tb_bad;\n  counter uut(.clk(1'b0), .nosuch(1'b0));\n  initial $finish;\nendmodule\n");
    const r = await run(['sim', '--json', '--top', 'counter', '--tb', tb, counter]);
    expect(r.exitCode).toBe(1);
    const j = JSON.parse(r.stdout);
    expect(j.status).toBe('xrun_failed');
    expect(j.reward).toBe(0);
    expect(j.diagnostics.find((d: { code?: string }) => d.code === 'PINNOTFOUND')).toMatchObject({ file: 'tb_bad.sv', line: 2 });
    const human = await run(['sim', '--top', 'counter', '--tb', tb, counter]);
    expect(human.exitCode).toBe(1);
    expect(human.stdout).toMatch(/tb_bad\.sv:2:\d+: PINNOTFOUND/);
  });

  it('exits 2 for DUT errors and usage errors', async () => {
    const multi = await run([
      'sim',
      '--tb',
      join(examples, 'counter', 'tb_counter.sv'),
      join(fixtures, 'designs', 'multitop', 'two_tops.v'),
    ]);
    expect(multi.exitCode).toBe(2);
    expect(multi.stderr).toMatch(/alpha, beta|beta, alpha/);
    expect(multi.stderr).toMatch(/--top/);
    const missing = await run(['sim', '--tb', 'nope.sv', counter]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toMatch(/testbench not found/);
    const noTb = await run(['sim', counter]);
    expect(noTb.exitCode).toBe(2);
  });

  it('applies a waiver file and reports raw and waived figures; writes lcov', async () => {
    const dir = scratchDir('chorus-cli-');
    const waivers = join(dir, 'counter.waivers');
    writeFileSync(
      waivers,
      '# reviewed 2026-12-01\ncounter.sv:19:line   load is tied off in this SoC\ncounter.sv:22:line:else  enable is always on\n',
    );
    const lcov = join(dir, 'cov.info');
    const r = await run([
      'sim',
      '--json',
      '--waivers',
      waivers,
      '--lcov',
      lcov,
      '--tb',
      join(examples, 'counter', 'tb_counter_weak.sv'),
      counter,
    ]);
    expect(r.exitCode).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.coverage.waivedPoints).toBe(2);
    expect(j.coverage.raw.tallies.line).toEqual({ covered: 3, total: 5 });
    expect(j.coverage.waived.tallies.line).toEqual({ covered: 3, total: 3 });
    const info = readFileSync(lcov, 'utf8');
    expect(info).toContain(`SF:${counter}`);
    // lcov is the scored point set: the waived points are left out, as the waived figure leaves
    // them out, and its line records are that figure's.
    expect(info).not.toMatch(/^DA:19,/m);
    expect(info).toMatch(/^LF:3$/m);
    expect(info).toMatch(/^LH:3$/m);
    expect(info).toMatch(/^BRDA:23,0,1,-$/m);
    expect(info).toMatch(/end_of_record/);
  });

  it('lcov and the scored figure come from one point set (the same DUT files)', async () => {
    const tb = join(examples, 'counter', 'tb_counter_weak.sv');
    const r = await simulateFiles([counter], 'tb_counter_weak.sv', readFileSync(tb, 'utf8'), { wantPoints: true }, 'counter');
    expect(r.status).toBe('success');
    expect(r.points!.length).toBeGreaterThan(0);
    // Without waivers, the figure of the returned points is the scored figure, exactly.
    expect(figures(r.points!).overall).toBe(r.coverage!.waived.overall);
    expect(new Set(r.points!.map((p) => p.file))).toEqual(new Set([counter]));
    // Not asked, not sent (the reward service answers training millions of times).
    const plain = await simulateFiles([counter], 'tb_counter_weak.sv', readFileSync(tb, 'utf8'), {}, 'counter');
    expect(plain.points).toBeUndefined();
  });

  it('reads an EDA file list with -f', async () => {
    const dir = join(fixtures, 'designs', 'filelist');
    const tbDir = scratchDir('chorus-cli-');
    const tb = join(tbDir, 'tb_fl.sv');
    writeFileSync(
      tb,
      "module tb_fl; logic [3:0] d = 0; wire [3:0] q; wire n;\n  fl_top uut(.*);\n  initial begin #1 d = 4'ha; #1 d = 4'h5; #1 d = 0; #1 $finish; end\nendmodule\n",
    );
    const r = await run(['sim', '--json', '-f', 'files.f', '--tb', tb], dir);
    expect(r.exitCode).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.dutTop).toBe('fl_top');
    expect(j.coverage.waived.toggle).toBe(1);
  });
});

describe('CLI conventions', () => {
  it('--version prints the version in package.json', async () => {
    const { version } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    const r = await run(['--version']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout.trim()).toBe(`chorus ${version}`);
  });

  it('a command rejects the options it does not use (usage error, exit 2)', async () => {
    const e = await run(['eval', '--suite', 'x', '--top', 'm']);
    expect(e.exitCode).toBe(2);
    expect(e.stderr).toMatch(/chorus eval: unknown option '--top'/);
    const s = await run(['serve', '-I', 'inc']);
    expect(s.exitCode).toBe(2);
    expect(s.stderr).toMatch(/chorus serve: unknown option '-I'/);
    const g = await run(['sim', '--bogus']);
    expect(g.exitCode).toBe(2);
  });

  it('colour follows NO_COLOR / FORCE_COLOR / TERM=dumb, not only the terminal', async () => {
    const args = ['sim', '--top', 'counter', '--tb', join(examples, 'counter', 'tb_counter_weak.sv'), counter];
    const esc = '\x1b[';
    const forced = await execa(process.execPath, [cli, ...args], { cwd: repoRoot, reject: false, env: { FORCE_COLOR: '1', NO_COLOR: '' } });
    expect(forced.stdout).toContain(esc);
    const off = await execa(process.execPath, [cli, ...args], { cwd: repoRoot, reject: false, env: { FORCE_COLOR: '1', NO_COLOR: '1' } });
    expect(off.stdout).not.toContain(esc);
    expect(off.exitCode).toBe(0);
  });
});
