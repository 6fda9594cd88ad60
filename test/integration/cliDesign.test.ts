// The CLI on designs as they live in repositories: a folder or one file of a repository, what was
// found said on stderr, --save-project recording it in chorus.json so that the next run (naming no
// design at all) needs no search, and nothing else written into the repository.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { cpSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fixtures, repoRoot, scratchDir } from '../helpers.js';

const cli = join(repoRoot, 'dist', 'cli.js');
const run = (args: string[], cwd: string, env: Record<string, string | undefined> = {}) =>
  execa(process.execPath, [cli, ...args], { cwd, reject: false, env: { ...process.env, ...env }, extendEnv: false });

const TB = `module tb;
  logic clk_i = 0, rst_ni = 0, push_i = 0, pop_i = 0, full_o, empty_o;
  logic [7:0] data_i = 8'h5a, data_o;
  cc_fifo uut (.*);
  always #5 clk_i = ~clk_i;
  initial begin
    repeat (2) @(negedge clk_i); rst_ni = 1; push_i = 1;
    @(negedge clk_i); push_i = 0;
    $display("empty=%0d", empty_o);
    $finish;
  end
endmodule
`;

function files(dir: string): string[] {
  const out: string[] = [];
  const walk = (p: string): void => {
    for (const e of readdirSync(p).sort()) {
      const q = join(p, e);
      out.push(relative(dir, q));
      if (statSync(q).isDirectory()) walk(q);
    }
  };
  walk(dir);
  return out;
}

describe('chorus sim on a repository', () => {
  it('one file: finds the include, package and submodule, --save-project records them, the next run reads chorus.json', async () => {
    const top = scratchDir('chorus-clirepo-');
    const r = join(top, 'common');
    cpSync(join(fixtures, 'designs', 'repo_like'), r, { recursive: true });
    mkdirSync(join(r, '.git'));
    const tb = join(top, 'tb.sv');
    writeFileSync(tb, TB);
    const before = files(r);

    const first = await run(['sim', '--tb', tb, 'src/cc_fifo.sv', '--save-project'], r);
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.stderr).toContain('note: cc/assertions.svh: found at include/cc/assertions.svh; added -I include');
    expect(first.stderr).toContain('note: package cc_pkg: found in src/cc_pkg.sv; added src/cc_pkg.sv');
    expect(first.stderr).toContain(`note: design settings written to ${join(r, 'chorus.json')}`);
    expect(first.stdout).toMatch(/status: success/);
    expect(JSON.parse(readFileSync(join(r, 'chorus.json'), 'utf8'))).toEqual({
      files: ['src/cc_fifo.sv', 'src/cc_pkg.sv', 'src/cc_mem.sv'],
      includeDirs: ['include'],
      top: 'cc_fifo',
    });
    expect(files(r)).toEqual([...before, 'chorus.json'].sort());

    const again = await run(['sim', '--tb', tb], r);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stderr).not.toContain('found at');
    expect(again.stdout).toMatch(/status: success/);
  });

  it('a folder: lists what it left out', async () => {
    const top = scratchDir('chorus-clifolder-');
    const r = join(top, 'common');
    cpSync(join(fixtures, 'designs', 'repo_like'), r, { recursive: true });
    mkdirSync(join(r, '.git'));
    writeFileSync(join(top, 'tb.sv'), TB);
    const res = await run(['sim', '--tb', join(top, 'tb.sv'), '.'], r);
    expect(res.exitCode, res.stderr).toBe(0);
    expect(res.stderr).toContain('note: .: 3 design files');
    expect(res.stderr).toMatch(
      /note: left out of \.: dv\/ \(verification folder\), src\/cc_fifo_tb\.sv \(testbench by its name\), test\/ \(verification folder\)/,
    );
  });

  it('a Bender manifest without bender installed: exit 2 naming the tool and how to install it', async () => {
    const dir = scratchDir('chorus-nobender-');
    writeFileSync(join(dir, 'tb.sv'), TB);
    const res = await run(['sim', '--tb', join(dir, 'tb.sv'), join(fixtures, 'designs', 'manifest', 'fx_top', 'Bender.yml')], dir, {
      PATH: process.env.PATH?.split(':')
        .filter((d) => !/chorus-cache|cargo/.test(d))
        .join(':'),
      CHORUS_BENDER: undefined,
    });
    expect(res.exitCode).toBe(2);
    expect(res.stderr).toContain('design error (tool-missing)');
    expect(res.stderr).toContain('reading it needs bender, which was not found');
    expect(res.stderr).toContain('cargo install bender');
  });
});
