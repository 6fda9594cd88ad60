// The jail's command lines, run for real on a small host program copied into a run directory (as
// Vtb is): what it can see, its environment, its identity, with and without user namespaces.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { scratchDir } from '../helpers.js';
import {
  designView,
  detectJail,
  jailCommand,
  parseLdList,
  sharedLibraries,
  toolchainCommand,
  type JailInfo,
} from '../../src/core/sim/jail.js';
import { processesNaming, runBounded } from '../../src/core/util/proc.js';

const LIMITS = { memoryLimitMb: 512, fileSizeLimitBytes: 1 << 20, timeoutS: 20 };

/** Runs a copy of `program` (cat by default) in the simulation's jail, as Vtb runs. */
async function inJail(jail: JailInfo, args: string[], design = designView([], []), program = '/usr/bin/cat') {
  const run = scratchDir('chorus-jail-run-');
  const exe = join(run, basename(program));
  copyFileSync(program, exe);
  const libs = await sharedLibraries(exe, `test-${basename(program)}`);
  // A secret in the caller's environment: neither bwrap nor the jailed program may get it.
  process.env.SECRET_TOKEN = 'must-not-pass';
  try {
    const cmd = jailCommand(jail, run, exe, args, LIMITS, { design, libs });
    expect(JSON.stringify(cmd)).not.toContain('must-not-pass');
    return await runBounded(cmd.file, cmd.args, { cwd: run, env: cmd.env, timeoutS: 30 });
  } finally {
    delete process.env.SECRET_TOKEN;
  }
}

describe('jail', () => {
  // These tests are about the jail's own command lines: they run it whatever CHORUS_NO_JAIL says
  // (the unjailed mode is tried by the suites that flip it themselves).
  const saved = process.env.CHORUS_NO_JAIL;
  beforeAll(() => {
    delete process.env.CHORUS_NO_JAIL;
  });
  afterAll(() => {
    if (saved !== undefined) process.env.CHORUS_NO_JAIL = saved;
  });

  it("parses the dynamic loader's list", () => {
    const text =
      '\tlinux-vdso.so.1 (0x00007f)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n';
    expect(parseLdList(text)).toEqual(['/lib/x86_64-linux-gnu/libc.so.6', '/lib64/ld-linux-x86-64.so.2']);
  });

  it('shows design directories whole, hides their dot-entries, and narrows a home directory to the design files', () => {
    const d = scratchDir('chorus-jail-design-');
    writeFileSync(join(d, 'a.sv'), 'module a; endmodule\n');
    writeFileSync(join(d, '.env'), 'x');
    mkdirSync(join(d, '.git'));
    const v = designView([join(d, 'a.sv')], [d]);
    expect(v.paths).toEqual([d]);
    expect(v.hidden.sort()).toEqual([join(d, '.env'), join(d, '.git')]);
    const home = designView([join(homedir(), 'top.sv')], []);
    expect(home.paths).toEqual([join(homedir(), 'top.sv')]);
    expect(home.note).toMatch(/too broad to show whole/);
  });

  it('hides dot-entries at every depth, without entering them or following links, and keeps what the design names', () => {
    const d = scratchDir('chorus-jail-design-');
    writeFileSync(join(d, 'a.sv'), 'module a; endmodule\n');
    mkdirSync(join(d, 'sub', 'deeper', '.git', 'objects'), { recursive: true });
    writeFileSync(join(d, 'sub', '.secret'), 'nested-canary');
    writeFileSync(join(d, 'sub', 'deeper', '.git', 'config'), 'x');
    writeFileSync(join(d, 'sub', 'deeper', '.git', 'objects', '.pack'), 'x');
    // An include directory under a dot-directory: shown, its own dot-files hidden.
    mkdirSync(join(d, '.gen', 'inc'), { recursive: true });
    writeFileSync(join(d, '.gen', 'inc', 'defs.vh'), '`define X 1\n');
    writeFileSync(join(d, '.gen', 'inc', '.token'), 'x');
    writeFileSync(join(d, '.gen', 'other.txt'), 'x');
    // A dot-named link is left alone: in the jail it leads to its target's own (shown or hidden) path.
    symlinkSync(join(d, 'sub', '.secret'), join(d, 'sub', '.alias'));
    const v = designView([join(d, 'a.sv')], [d, join(d, '.gen', 'inc')]);
    expect(v.paths).toEqual([d]);
    expect(v.hidden.sort()).toEqual(
      [join(d, '.gen', 'inc', '.token'), join(d, '.gen', 'other.txt'), join(d, 'sub', '.secret'), join(d, 'sub', 'deeper', '.git')].sort(),
    );
    expect(v.note).toBe('design directories shown read-only: 1');
  });

  it('a design directory too big to walk shows only the design files and the HDL files beside them', () => {
    const d = scratchDir('chorus-jail-design-');
    writeFileSync(join(d, 'a.sv'), 'module a; endmodule\n');
    writeFileSync(join(d, 'defs.vh'), '`define X 1\n');
    writeFileSync(join(d, 'notes.txt'), 'x');
    writeFileSync(join(d, '.env'), 'x');
    mkdirSync(join(d, 'inc'));
    writeFileSync(join(d, 'inc', 'pkg.svh'), 'x');
    mkdirSync(join(d, 'many'));
    for (let i = 0; i < 50; i++) writeFileSync(join(d, 'many', `f${i}`), 'x');
    const v = designView([join(d, 'a.sv')], [join(d, 'inc')], 40);
    expect(v.paths.sort()).toEqual([join(d, 'a.sv'), join(d, 'defs.vh'), join(d, 'inc', 'pkg.svh')].sort());
    expect(v.hidden).toEqual([]);
    expect(v.note).toMatch(/holds more than 40 entries .*only the design files and the HDL files/);
    // Too many dot-entries to hide (each one a mount): the same.
    const dots = scratchDir('chorus-jail-design-');
    writeFileSync(join(dots, 'a.sv'), 'module a; endmodule\n');
    for (let i = 0; i < 6; i++) writeFileSync(join(dots, `.d${i}`), 'x');
    expect(designView([join(dots, 'a.sv')], [], 1000, 5).paths).toEqual([join(dots, 'a.sv')]);
    expect(designView([join(dots, 'a.sv')], [], 1000, 6).paths).toEqual([dots]);
  });

  it('a nested dot-file reads as empty in the jail, a nested dot-directory as empty', async () => {
    const d = scratchDir('chorus-jail-design-');
    writeFileSync(join(d, 'a.sv'), 'module a; endmodule\n');
    mkdirSync(join(d, 'sub', '.git'), { recursive: true });
    writeFileSync(join(d, 'sub', '.secret'), 'nested-canary');
    writeFileSync(join(d, 'sub', '.git', 'config'), 'nested-canary');
    writeFileSync(join(d, 'sub', 'b.vh'), 'visible');
    symlinkSync('.secret', join(d, 'sub', 'alias.vh'));
    const jail = await detectJail();
    const view = designView([join(d, 'a.sv')], []);
    const shown = await inJail(jail, [join(d, 'sub', 'b.vh')], view);
    expect(shown.stdout).toBe('visible');
    for (const p of [join(d, 'sub', '.secret'), join(d, 'sub', '.git', 'config'), join(d, 'sub', 'alias.vh')]) {
      const r = await inJail(jail, [p], view);
      expect(r.stdout, p).not.toContain('nested-canary');
    }
  });

  it('the simulation sees no /etc, no /proc, a /dev of five devices, an empty environment, and runs as nobody', async () => {
    const jail = await detectJail();
    expect(jail).toMatchObject({ kind: 'bubblewrap', userns: true });
    const caps = await inJail(jail, ['--print'], undefined, '/usr/sbin/capsh');
    expect(caps.exitCode, caps.all).toBe(0);
    expect(caps.stdout).toMatch(/^uid=65534\b/m);
    expect(caps.stdout).toMatch(/^Current: =\s*$/m);
    const env = await inJail(jail, [], undefined, '/usr/bin/env');
    expect(env.exitCode, env.all).toBe(0);
    expect(
      env.stdout
        .split('\n')
        .filter(Boolean)
        .map((v) => v.split('=')[0]),
    ).toEqual(['PWD']);
    // No /proc: not its own memory (writing /proc/self/mem patches code), not its descriptors
    // (the harness reports on fd 3), not the launcher's environment; /dev/fd and /dev/stdout lead there.
    for (const p of [
      '/proc/self/mem',
      '/proc/self/fd/0',
      '/proc/self/fd/1',
      '/proc/self/status',
      '/proc/1/environ',
      '/dev/fd/1',
      '/dev/stdout',
    ]) {
      const r = await inJail(jail, [p]);
      expect(r.exitCode, `${p}: ${r.stdout}`).not.toBe(0);
      expect(r.stderr).toMatch(/No such file or directory/);
    }
    const dev = await inJail(jail, ['-A', '/dev', '/'], undefined, '/usr/bin/ls');
    expect(dev.exitCode, dev.all).toBe(0);
    expect(dev.stdout).toMatch(/^\/dev:\nfull\nnull\nrandom\nurandom\nzero\n/m);
    expect(dev.stdout).not.toMatch(/^proc$/m);
    expect((await inJail(jail, ['/dev/null'])).exitCode).toBe(0);
    for (const p of [
      '/etc/passwd',
      '/etc/hostname',
      join(homedir(), '.bashrc'),
      '/root',
      '/tmp',
      '/dev/tty',
      '/dev/shm',
      '/dev/pts/ptmx',
    ]) {
      const r = await inJail(jail, [p]);
      expect(r.exitCode, `${p}: ${r.stdout}`).not.toBe(0);
    }
  });

  it('without user namespaces, root keeps its uid but no capability', async () => {
    const caps = await inJail({ kind: 'bubblewrap', userns: false }, ['--print'], undefined, '/usr/sbin/capsh');
    expect(caps.exitCode, caps.all).toBe(0);
    // No effective, permitted or inheritable capability...
    expect(caps.stdout).toMatch(/^Current: =\s*$/m);
    // ...and no way back up: nothing in the jail can gain privileges (and no setuid file is in it).
    expect(caps.stdout).toMatch(/no-new-privs=1/);
  });

  it('a symlink in a design directory leads nowhere inside the jail', async () => {
    const d = scratchDir('chorus-jail-design-');
    const outside = join(scratchDir('chorus-jail-outside-'), 'secret');
    writeFileSync(outside, 'canary-in-the-jail');
    writeFileSync(join(d, 'a.sv'), 'module a; endmodule\n');
    symlinkSync(outside, join(d, 'link'));
    const jail = await detectJail();
    const direct = await inJail(jail, [join(d, 'a.sv')], designView([join(d, 'a.sv')], []));
    expect(direct.stdout).toContain('module a;');
    const r = await inJail(jail, [join(d, 'link')], designView([join(d, 'a.sv')], []));
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).not.toContain('canary-in-the-jail');
  });

  it('compile steps see /usr and the run directory, not HOME or /etc, with a cleared environment', async () => {
    const jail = await detectJail();
    const run = scratchDir('chorus-jail-run-');
    writeFileSync(join(run, 'mine.txt'), 'mine');
    const cmd = toolchainCommand(
      jail,
      'sh',
      [
        '-c',
        'cat mine.txt; cat /etc/hostname 2>/dev/null || echo no-etc; ls ~ 2>/dev/null | head -1 || true; env | cut -d= -f1 | sort | tr "\\n" " "',
      ],
      {
        writable: [run],
        readOnly: [],
        cwd: run,
        toolDirs: [],
      },
    );
    const r = await runBounded(cmd.file, cmd.args, { cwd: run, env: cmd.env, timeoutS: 30 });
    expect(r.exitCode, r.all).toBe(0);
    expect(r.stdout).toContain('mine');
    expect(r.stdout).toContain('no-etc');
    expect(r.stdout).not.toMatch(/OPENAI|SECRET|HOME=/);
  });

  it('a toolchain that lives under /tmp (a CI clone, a project cache there) is visible to compile steps', async () => {
    const jail = await detectJail();
    const tools = scratchDir('chorus-jail-tool-'); // under the system temp folder, like a clone in /tmp
    mkdirSync(join(tools, 'bin'));
    writeFileSync(join(tools, 'bin', 'fake-tool'), '#!/bin/sh\necho fake-tool-ran\n', { mode: 0o755 });
    const run = scratchDir('chorus-jail-run-');
    const cmd = toolchainCommand(jail, join(tools, 'bin', 'fake-tool'), [], { writable: [run], readOnly: [], cwd: run, toolDirs: [tools] });
    const r = await runBounded(cmd.file, cmd.args, { cwd: run, env: cmd.env, timeoutS: 30 });
    expect(r.exitCode, r.all).toBe(0);
    expect(r.stdout).toContain('fake-tool-ran');
  });

  it("a cancel at any moment of the jail's start stops everything in it at once (the simulation runs in a session of its own)", async () => {
    const jail = await detectJail();
    const run = scratchDir('chorus-jail-run-');
    const exe = join(run, 'sleep');
    copyFileSync('/usr/bin/sleep', exe);
    const libs = await sharedLibraries(exe, 'test-sleep');
    const cmd = jailCommand(jail, run, exe, ['300'], { ...LIMITS, timeoutS: 300 }, { design: designView([], []), libs });
    // From before bubblewrap has forked to long after the program runs: the moments its own
    // --die-with-parent does not cover are among them.
    for (const delayMs of [0, 1, 2, 5, 10, 20, 40, 80, 160, 400]) {
      const ac = new AbortController();
      const t = setTimeout(() => ac.abort(), delayMs);
      const r = await runBounded(cmd.file, cmd.args, { cwd: run, env: cmd.env, timeoutS: 320, graceS: 2, signal: ac.signal });
      clearTimeout(t);
      expect(r.cancelled, `cancel after ${delayMs} ms`).toBe(true);
      expect(r.durationS, `cancel after ${delayMs} ms`).toBeLessThan(15);
      // Anywhere on the machine, not only below this process: a survivor is reparented.
      expect(processesNaming(run), `cancel after ${delayMs} ms`).toEqual([]);
    }
  });
});
