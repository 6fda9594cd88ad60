// The jail's command lines, run for real on a small host program copied into a run directory (as
// Vtb is): what it can see, its environment, its identity, with and without user namespaces.
import { describe, expect, it } from 'vitest';
import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
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
import { runBounded } from '../../src/core/util/proc.js';

const LIMITS = { memoryLimitMb: 512, fileSizeLimitBytes: 1 << 20, timeoutS: 20 };

async function inJail(jail: JailInfo, args: string[], design = designView([], [])) {
  const run = scratchDir('chorus-jail-run-');
  copyFileSync('/usr/bin/cat', join(run, 'cat'));
  const libs = await sharedLibraries(join(run, 'cat'), 'test-cat');
  // A secret in the caller's environment: neither bwrap nor the jailed program may get it.
  process.env.SECRET_TOKEN = 'must-not-pass';
  try {
    const cmd = jailCommand(jail, run, join(run, 'cat'), args, LIMITS, { design, libs });
    expect(JSON.stringify(cmd)).not.toContain('must-not-pass');
    return await runBounded(cmd.file, cmd.args, { cwd: run, env: cmd.env, timeoutS: 30 });
  } finally {
    delete process.env.SECRET_TOKEN;
  }
}

describe('jail', () => {
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

  it('the simulation sees no /etc, an empty environment, its own /proc, and runs as nobody', async () => {
    const jail = await detectJail();
    expect(jail).toMatchObject({ kind: 'bubblewrap', userns: true });
    const status = await inJail(jail, ['/proc/self/status']);
    expect(status.exitCode, status.all).toBe(0);
    expect(status.stdout).toMatch(/^Uid:\s+65534\s+65534/m);
    expect(status.stdout).toMatch(/^CapEff:\s+0+$/m);
    const env = await inJail(jail, ['/proc/self/environ']);
    expect(
      env.stdout
        .split('\0')
        .filter(Boolean)
        .map((v) => v.split('=')[0]),
    ).toEqual(['PWD']);
    // PID 1 is bubblewrap's own init: started with the reduced environment.
    const init = await inJail(jail, ['/proc/1/environ']);
    expect(init.stdout).not.toContain('must-not-pass');
    expect(init.stdout).not.toContain('OPENAI_API_KEY');
    for (const p of ['/etc/passwd', '/etc/hostname', join(homedir(), '.bashrc'), '/root', '/tmp']) {
      const r = await inJail(jail, [p]);
      expect(r.exitCode, `${p}: ${r.stdout}`).not.toBe(0);
    }
  });

  it('without user namespaces, root keeps its uid but no capability', async () => {
    const status = await inJail({ kind: 'bubblewrap', userns: false }, ['/proc/self/status']);
    expect(status.exitCode, status.all).toBe(0);
    expect(status.stdout).toMatch(/^CapEff:\s+0+$/m);
    expect(status.stdout).toMatch(/^CapPrm:\s+0+$/m);
    // No way back up: nothing in the jail can gain privileges (and no setuid file is in it).
    expect(status.stdout).toMatch(/^NoNewPrivs:\s+1$/m);
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
});
