// The run folder that `chorus generate`, `refine` and `sim` write (core/run/runFolder.ts), the
// output checks made before any work, SIGTERM leaving nothing in the temporary folder, and the
// design's $readmem data files.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { counterTb, examples, fixtures, repoRoot, scratchDir } from '../helpers.js';

const cli = join(repoRoot, 'dist', 'cli.js');
const counter = join(examples, 'counter', 'counter.sv');
/** The environment without the suite's CHORUS_OUT_DIR: the default location applies. */
const plainEnv = (): NodeJS.ProcessEnv => {
  const env = { ...process.env };
  delete env.CHORUS_OUT_DIR;
  return env;
};
const chorus = (args: string[], env: NodeJS.ProcessEnv = plainEnv()) =>
  execa(process.execPath, [cli, ...args], { reject: false, env, extendEnv: false });

describe('run folder', () => {
  it('generate writes every round, the best testbench and the coverage files into chorus-out/<top>/<run>/ beside the design', async () => {
    const dir = scratchDir('chorus-runfolder-');
    copyFileSync(counter, join(dir, 'counter.sv'));
    const r = await chorus(['generate', '--rounds', '1', join(dir, 'counter.sv')]);
    expect(r.exitCode).toBe(0);
    // Nothing beside the design any more: the testbench is in the run folder, and the output says where.
    expect(readdirSync(dir).sort()).toEqual(['chorus-out', 'counter.sv']);
    const latest = join(dir, 'chorus-out', 'counter', 'latest');
    const run = join(dir, 'chorus-out', 'counter', readlinkSync(latest));
    expect(r.stdout).toContain(`written to ${join(run, 'tb_counter.sv')}`);
    expect(r.stdout).toContain(`run folder: ${run}`);
    const files = readdirSync(latest).sort();
    expect(files).toEqual(
      expect.arrayContaining([
        'round-1.sv',
        'round-1.log',
        'tb_counter.sv',
        'coverage.dat',
        'coverage.info',
        'coverage.html',
        'summary.json',
        'junit.xml',
      ]),
    );
    const summary = JSON.parse(readFileSync(join(latest, 'summary.json'), 'utf8'));
    expect(summary.generator).toBe('builtin');
    expect(summary.run_dir).toBe(run);
    expect(readFileSync(join(latest, 'tb_counter.sv'), 'utf8')).toBe(summary.rounds[summary.best.round].testbench);
    expect(readFileSync(join(latest, 'round-1.sv'), 'utf8')).toBe(summary.rounds[0].testbench);
    // Logs are files of the run folder, named in the record, not copied into it; the best round keeps
    // its uncovered points, any other counts them.
    for (const [i, rd] of (summary.rounds as Array<{ result: Record<string, unknown> }>).entries()) {
      expect(rd.result.log).toBeUndefined();
      expect(rd.result.log_file).toBe(`round-${i + 1}.log`);
      expect(files).toContain(rd.result.log_file);
      if (i === summary.best.round) expect(Array.isArray(rd.result.uncovered)).toBe(true);
      else expect(typeof rd.result.uncovered_count).toBe('number');
    }
    // The host's copy of the database, lcov of the scored points, the annotated page.
    expect(readFileSync(join(latest, 'coverage.dat'), 'utf8')).toMatch(/^# SystemC::Coverage-3/);
    expect(readFileSync(join(latest, 'coverage.info'), 'utf8')).toMatch(new RegExp(`SF:${join(dir, 'counter.sv')}\\n`));
    const html = readFileSync(join(latest, 'coverage.html'), 'utf8');
    expect(html).toMatch(/^<!DOCTYPE html>/);
    expect(html).not.toMatch(/<script|<link|src=/i);
    expect(html).toContain('always_ff @(posedge clk or negedge rst_n)');
    expect(readFileSync(join(latest, 'junit.xml'), 'utf8')).toMatch(/<testcase classname="chorus.counter" name="round-1"/);
    // A second run: a new folder, `latest` follows it.
    const again = await chorus(['generate', '--rounds', '0', join(dir, 'counter.sv')]);
    expect(again.exitCode).toBe(0);
    expect(readdirSync(join(dir, 'chorus-out', 'counter')).length).toBe(3);
    expect(readlinkSync(latest)).not.toBe(run.split('/').pop());
  });

  it('sim writes its run folder under --out-dir; a failed run is a junit failure with its reason; untrusted text is escaped', async () => {
    const dir = scratchDir('chorus-runfolder-');
    const tb = join(dir, 'tb_x.sv');
    // The testbench's text and output land on the page and in the log: both must stay text.
    writeFileSync(
      tb,
      counterTb(`  // </pre><script>alert(1)</script>
  initial begin $display("<script>alert(2)</script>"); uut.nosuch = 1; $finish; end`),
    );
    const r = await chorus(['sim', '--out-dir', join(dir, 'runs'), '--tb', tb, counter]);
    expect(r.exitCode).toBe(1);
    const latest = join(dir, 'runs', 'counter', 'latest');
    const junit = readFileSync(join(latest, 'junit.xml'), 'utf8');
    expect(junit).toMatch(/<failure message="xrun_failed at lint[^"]*"/);
    expect(junit).not.toContain('<script');
    expect(readFileSync(join(latest, 'round-1.sv'), 'utf8')).toBe(readFileSync(tb, 'utf8'));

    writeFileSync(
      tb,
      counterTb(`  // </pre><script>alert(1)</script>\n  initial begin rst_n = 1; #20 $finish; end\n  always #5 clk = ~clk;`),
    );
    const ok = await chorus(['sim', '--out-dir', join(dir, 'runs'), '--tb', tb, counter]);
    expect(ok.exitCode).toBe(0);
    const html = readFileSync(join(latest, 'coverage.html'), 'utf8');
    expect(html).toContain('&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toMatch(/<script/i);
    // Its uncovered points carry their reasons: not hit, or reached by the formal engine.
    expect(html).toMatch(/not-hit: |witness: /);
  });

  it('checks every output path before any work: exit 2, one line, nothing made', async () => {
    const dir = scratchDir('chorus-runfolder-');
    copyFileSync(counter, join(dir, 'counter.sv'));
    writeFileSync(join(dir, 'afile'), 'x');
    const under = await chorus(['generate', '--out-dir', join(dir, 'afile', 'sub'), join(dir, 'counter.sv')]);
    expect(under.exitCode).toBe(2);
    expect(under.stderr).toMatch(/^chorus generate: cannot write .*afile\/sub: .*afile is a file, not a folder$/);
    const exists = await chorus(['sim', '--out-dir', join(dir, 'afile'), '--tb', join(examples, 'counter', 'tb_counter.sv'), counter]);
    expect(exists.exitCode).toBe(2);
    expect(exists.stderr).toMatch(/afile is a file, not a folder/);
    writeFileSync(join(dir, 'mine.sv'), '// mine\n');
    const out = await chorus(['generate', '--out', join(dir, 'mine.sv'), join(dir, 'counter.sv')]);
    expect(out.exitCode).toBe(2);
    expect(out.stderr).toMatch(/mine\.sv exists; choose another --out or pass --force/);
    expect(out.stderr).not.toMatch(/\n\s+at /);
    expect(readFileSync(join(dir, 'mine.sv'), 'utf8')).toBe('// mine\n');
    expect(existsSync(join(dir, 'chorus-out'))).toBe(false);
    if (process.getuid?.() !== 0) {
      const ro = join(dir, 'ro');
      mkdirSync(ro);
      copyFileSync(counter, join(ro, 'counter.sv'));
      chmodSync(ro, 0o555);
      const r = await chorus(['generate', join(ro, 'counter.sv')]);
      chmodSync(ro, 0o755);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toMatch(/is not writable \(choose the run folder with --out-dir\)/);
    }
  });

  it('SIGTERM during a simulation leaves nothing in the temporary folder', async () => {
    const dir = scratchDir('chorus-runfolder-');
    const tmp = join(dir, 'tmp');
    mkdirSync(tmp);
    const tb = join(dir, 'tb_long.sv');
    writeFileSync(tb, counterTb('  always #5 clk = ~clk;\n  initial begin rst_n = 1; en = 1; forever #10 din = din + 1; end'));
    const child = execa(
      process.execPath,
      [cli, 'sim', '--sim-time', '0', '--timeout', '60', '--out-dir', join(dir, 'runs'), '--tb', tb, counter],
      {
        reject: false,
        env: { ...process.env, TMPDIR: tmp },
      },
    );
    // Wait until the simulation runs (its executable is built), then terminate.
    const t0 = Date.now();
    while (Date.now() - t0 < 60_000) {
      const run = readdirSync(tmp).find((f) => f.startsWith('chorus-run-'));
      if (run && existsSync(join(tmp, run, 'Vtb'))) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(readdirSync(tmp).some((f) => f.startsWith('chorus-run-'))).toBe(true);
    child.kill('SIGTERM');
    const r = await child;
    expect(r.exitCode).toBe(143);
    expect(readdirSync(tmp)).toEqual([]);
  });
});

describe('build memory', () => {
  it('a build over --memory-limit says how much it was given and which option raises it', async () => {
    const dir = scratchDir('chorus-runfolder-');
    const r = await chorus(['sim', '--memory-limit', '100', '--out-dir', dir, '--tb', join(examples, 'counter', 'tb_counter.sv'), counter]);
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toContain('Verilator needed more than 100 MB to build this design; raise it with --memory-limit');
    const bad = await chorus(['sim', '--memory-limit', 'lots', '--tb', join(examples, 'counter', 'tb_counter.sv'), counter]);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/--memory-limit must be/);
  });
});

describe('design data files', () => {
  const rom = join(fixtures, 'designs', 'readmem');

  it("a relative $readmemh in the design reads the design folder's file", async () => {
    const dir = scratchDir('chorus-runfolder-');
    const r = await chorus(['sim', '--out-dir', dir, '--tb', join(rom, 'tb_rom.sv'), join(rom, 'rom.sv')]);
    expect(r.exitCode).toBe(0);
    const log = readFileSync(join(dir, 'rom', 'latest', 'round-1.log'), 'utf8');
    expect(log).toContain('rom[0]=a5');
    expect(log).toContain('rom[3]=3c');
    expect(log).not.toMatch(/file not found/);
  });

  it('a $readmem file found nowhere is an error of the design in the summary', async () => {
    const dir = scratchDir('chorus-runfolder-');
    copyFileSync(join(rom, 'rom.sv'), join(dir, 'rom.sv'));
    const r = await chorus(['sim', '--json', '--out-dir', join(dir, 'runs'), '--tb', join(rom, 'tb_rom.sv'), join(dir, 'rom.sv')]);
    const j = JSON.parse(r.stdout);
    expect(j.diagnostics).toContainEqual(
      expect.objectContaining({ code: 'CHORUS-READMEM', severity: 'error', origin: 'dut', file: join(dir, 'rom.sv'), line: 8 }),
    );
    const human = await chorus(['sim', '--out-dir', join(dir, 'runs'), '--tb', join(rom, 'tb_rom.sv'), join(dir, 'rom.sv')]);
    expect(human.stdout).toMatch(/errors \(1\):\n {2}.*rom\.sv:8:\d+: CHORUS-READMEM: \$readmemh file 'init.hex' not found/);
  });
});
