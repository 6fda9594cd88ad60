// Issue 12: no testbench may read what is not its own. A canary secret sits in a file in a
// temporary HOME, in the environment (as the model endpoint's API key) and in a file outside the
// design; a design directory holds symlinks to them and a dot-file with it. Every channel a
// testbench has for reading is tried ($fopen + $fgets / $fscanf, $readmemh / $readmemb, `include
// in every spelling, ../ paths, paths computed at run time, $value$plusargs, macros), against the
// real bubblewrap jail and with the jail disabled (the static check alone). Each test asserts the
// canary appears nowhere: not in the result record, not in the reward service's response, not in
// the feedback the agent loop would send to the model, not in `chorus sim`'s stdout.
import { userInfo } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { counterTb, examples, read, repoRoot, scratchDir } from '../helpers.js';
import { loadDesign } from '../../src/core/run/design.js';
import { VerilatorSimulator } from '../../src/core/sim/verilator/backend.js';
import { cacheRoot } from '../../src/core/util/cache.js';
import { feedbackTurn, resultForEcho } from '../../src/core/agent/protocol.js';
import { runAgent } from '../../src/core/agent/loop.js';
import { createOpenAIBackend } from '../../src/core/llm/openai.js';
import { startScoreServer, type ScoreServer } from '../../src/core/service/http.js';
import type { SimResult } from '../../src/core/sim/result.js';
import type { DesignInfo, DesignSpec } from '../../src/core/design/types.js';
import { fencedReply, startScriptedServer } from '../support/scriptedServer.js';

/** The real account's own shell profile (from the password database, not the test's HOME). */
const USER_BASHRC = join(userInfo().homedir, '.bashrc');

/** Hex only, so $readmemh reads it as one word and %h prints it back. */
const CANARY = 'ca9a7e' + randomBytes(12).toString('hex');
/** The random part: what any leak, whole or cut, would carry. */
const MARK = CANARY.slice(6, 22);
const leaks = (x: unknown): boolean => (typeof x === 'string' ? x : JSON.stringify(x)).toLowerCase().includes(MARK);

const sim = new VerilatorSimulator();
const counterSrc = read(join(examples, 'counter', 'counter.sv'));
const goodTb = read(join(examples, 'counter', 'tb_counter.sv'));
const saved = {
  HOME: process.env.HOME,
  OPENAI_API_KEY: process.env.OPENAI_API_KEY,
  CHORUS_CACHE_DIR: process.env.CHORUS_CACHE_DIR,
  CHORUS_NO_JAIL: process.env.CHORUS_NO_JAIL,
};

let HOME = '';
let OUT = '';
let DESIGN = '';
let SECRET = '';
let design: DesignSpec;
let info: DesignInfo;

beforeAll(async () => {
  // The runtime cache stays where it is: only HOME moves.
  process.env.CHORUS_CACHE_DIR = cacheRoot();
  HOME = scratchDir('chorus-home-');
  writeFileSync(join(HOME, '.secret'), `${CANARY}\n`);
  mkdirSync(join(HOME, '.ssh'));
  writeFileSync(join(HOME, '.ssh', 'id_ed25519'), `${CANARY}\n`);
  process.env.HOME = HOME;
  process.env.OPENAI_API_KEY = `sk-${CANARY}`;
  OUT = scratchDir('chorus-outside-');
  SECRET = join(OUT, 'secret.txt');
  writeFileSync(SECRET, `${CANARY}\n`);
  DESIGN = scratchDir('chorus-design-');
  copyFileSync(join(examples, 'counter', 'counter.sv'), join(DESIGN, 'counter.sv'));
  writeFileSync(join(DESIGN, 'defs.vh'), '`define DEFS_OK 1\n');
  // A design part that opens the file its parameter names: a testbench can choose the name.
  writeFileSync(
    join(DESIGN, 'rom.sv'),
    'module rom #(parameter string F = "rom.hex") ();\n  logic [119:0] m [0:0];\n  initial $readmemh(F, m);\nendmodule\n',
  );
  writeFileSync(join(DESIGN, '.env'), `API_KEY=${CANARY}\n`);
  symlinkSync(SECRET, join(DESIGN, 'leak.vh'));
  symlinkSync(SECRET, join(DESIGN, 'leak.hex'));
  symlinkSync(HOME, join(DESIGN, 'homelink'));
  ({ design, info } = await loadDesign({
    files: [join(DESIGN, 'counter.sv'), join(DESIGN, 'rom.sv')],
    includeDirs: [DESIGN],
    top: 'counter',
  }));
});

afterAll(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const tbWith = (body: string, pre = ''): string => counterTb(body, { pre });

/** Opens `open` and prints every line of it. */
const dump = (open: string, decl = ''): string =>
  tbWith(`  integer fd; string s;${decl}
  initial begin
    fd = ${open};
    if (fd != 0) while (!$feof(fd)) begin void'($fgets(s, fd)); $display("got %s", s); end
    $finish;
  end`);

/** Opens `open` and prints it byte by byte (NULs as ';': /proc/PID/environ separates with NUL). */
const dumpBytes = (open: string): string =>
  tbWith(`  integer fd, c; string s;
  initial begin
    fd = ${open}; s = "";
    if (fd != 0) while (!$feof(fd)) begin c = $fgetc(fd); if (c == 0) s = {s, ";"}; else if (c > 0) s = {s, string'(8'(c))}; end
    $display("got %s", s);
    $finish;
  end`);

/** A string expression the static check cannot read: the path cut in two and concatenated. */
const computed = (p: string): string => `{"${p.slice(0, 4)}", "${p.slice(4)}"}`;

/** Reads `file` into a 120-bit word with `task` and prints it in hex. */
const readmem = (task: string, file: string): string =>
  tbWith(`  logic [119:0] m [0:0];
  initial begin
    ${task}(${file}, m);
    $display("got %h", m[0]);
    $finish;
  end`);

interface Attack {
  name: string;
  tb: () => string;
  /** 'always': the static check refuses it, jail or not. 'unjailed': refused without a jail; with
   * one it runs (or fails to compile) and finds nothing. 'never': harmless, it runs either way. */
  refused: 'always' | 'unjailed' | 'never';
  /** The refusal's code when not CHORUS-FILE. */
  code?: string;
  /** Needs the design directory's symlinks or dot-files (engine only: the service writes its own design directory). */
  designDir?: boolean;
}

const ATTACKS: Attack[] = [
  { name: '$fopen + $fgets of /etc/shadow', tb: () => dump('$fopen("/etc/shadow", "r")'), refused: 'always' },
  { name: '$fopen + $fgets of an absolute path outside the design', tb: () => dump(`$fopen("${SECRET}", "r")`), refused: 'always' },
  { name: '$fopen of /proc/self/environ', tb: () => dumpBytes('$fopen("/proc/self/environ", "r")'), refused: 'always' },
  {
    name: '$fopen of /proc/self/environ, computed',
    tb: () => dumpBytes(`$fopen(${computed('/proc/self/environ')}, "r")`),
    refused: 'unjailed',
  },
  {
    name: '$fopen of /proc/1/environ (the jail launcher), computed',
    tb: () => dumpBytes(`$fopen(${computed('/proc/1/environ')}, "r")`),
    refused: 'unjailed',
  },
  { name: '$fopen of a file in HOME, computed', tb: () => dump(`$fopen(${computed(join(HOME, '.secret'))}, "r")`), refused: 'unjailed' },
  { name: '$fopen of ~/.ssh, by ~', tb: () => dump('$fopen("~/.ssh/id_ed25519", "r")'), refused: 'always' },
  {
    name: '$fopen with ../ climbing to the outside file',
    tb: () => dump(`$fopen("../../../../../../../..${SECRET}", "r")`),
    refused: 'always',
  },
  { name: '$fopen with the path spelled in string escapes', tb: () => dump(`$fopen("\\057${SECRET.slice(1)}", "rb")`), refused: 'always' },
  {
    name: '$fscanf through a path built with $sformatf',
    tb: () =>
      tbWith(`  integer fd, n; string s, p;
  initial begin
    p = $sformatf("%s/%s", "${OUT}", "secret.txt");
    fd = $fopen(p, "r");
    if (fd != 0) begin n = $fscanf(fd, "%s", s); $display("got %s", s); end
    $finish;
  end`),
    refused: 'unjailed',
  },
  {
    name: '$value$plusargs supplies part of the path',
    tb: () =>
      tbWith(`  integer fd; string s, p;
  initial begin
    if ($value$plusargs("chorus+cov+%s", p)) p = {"${OUT}", "/secret.txt"};
    fd = $fopen(p, "r");
    if (fd != 0) begin void'($fgets(s, fd)); $display("got %s", s); end
    $finish;
  end`),
    refused: 'unjailed',
  },
  { name: '$readmemh of an absolute path', tb: () => readmem('$readmemh', `"${SECRET}"`), refused: 'always' },
  { name: '$readmemb with ../', tb: () => readmem('$readmemb', `"../../../../../../..${SECRET}"`), refused: 'always' },
  {
    name: '$readmemh of a design-directory symlink, computed',
    tb: () => readmem('$readmemh', computed(join(DESIGN, 'leak.hex'))),
    refused: 'unjailed',
    designDir: true,
  },
  {
    name: '$readmemh of a design-directory symlink by its relative name',
    tb: () => readmem('$readmemh', '"leak.hex"'),
    refused: 'never',
    designDir: true,
  },
  {
    name: '$fopen of a design dot-file (.env), computed',
    tb: () => dump(`$fopen(${computed(join(DESIGN, '.env'))}, "r")`),
    refused: 'unjailed',
    designDir: true,
  },
  {
    name: '$fopen through a design-directory symlink to HOME, computed',
    tb: () => dump(`$fopen(${computed(join(DESIGN, 'homelink', '.secret'))}, "r")`),
    refused: 'unjailed',
    designDir: true,
  },
  {
    // A design module besides the one under test: refused whatever it reads (issue 40).
    name: 'a design parameter that names the file ($readmemh inside the DUT)',
    tb: () =>
      tbWith(`  rom #(.F("${SECRET}")) r ();
  initial begin #1 $display("got %h", r.m[0]); $finish; end`),
    refused: 'always',
    // Without a jail the file check (CHORUS-FILE) refuses it first.
    code: 'CHORUS-INSTANCE',
    designDir: true,
  },
  {
    name: '$fopen hidden in a macro',
    tb: () => dump('`OPEN(' + `"${SECRET}")`).replace('`timescale', '`define OPEN(p) $fopen(p, "r")\n`timescale'),
    refused: 'always',
  },
  { name: '`include of an absolute path', tb: () => tbWith('', `\`include "${SECRET}"\n`), refused: 'always' },
  { name: '`include <absolute path>', tb: () => tbWith('', `\`include <${SECRET}>\n`), refused: 'always' },
  { name: '`include with ../', tb: () => tbWith('', `\`include "../../../../../../..${SECRET}"\n`), refused: 'always' },
  { name: '`include of a design-directory symlink', tb: () => tbWith('', '`include "leak.vh"\n'), refused: 'always', designDir: true },
  { name: '`include of a design dot-file', tb: () => tbWith('', '`include ".env"\n'), refused: 'always', designDir: true },
  { name: '`include of a macro', tb: () => tbWith('', `\`define P "${SECRET}"\n\`include \`P\n`), refused: 'always' },
  {
    name: '`include assembled by token pasting',
    tb: () => tbWith('', `\`define J(x) \`inc\`\`x\n\`J(lude "${SECRET}")\n`),
    refused: 'unjailed',
  },
  {
    name: '`include assembled from a macro argument',
    tb: () => tbWith('', `\`define K(x) \`x "${SECRET}"\n\`K(include)\n`),
    refused: 'unjailed',
  },
  {
    name: '`include through a stringified macro',
    tb: () => tbWith('', `\`define S(x) \`"x\`"\n\`include \`S(${SECRET})\n`),
    refused: 'always',
  },
];

describe('the canary detector', () => {
  it('sees a canary the testbench prints itself (so its silence elsewhere means something)', async () => {
    const r = await sim.simulate({
      design,
      top: info.top,
      testbench: { name: 'tb.sv', content: tbWith(`  initial begin $display("got %s", "${CANARY}"); $finish; end`) },
    });
    expect(r.status).toBe('success');
    expect(leaks(r)).toBe(true);
  });
});

const problemCodes = (r: SimResult): string[] => r.diagnostics.filter((d) => d.severity === 'error').map((d) => d.code ?? '');

for (const mode of ['jail', 'no jail'] as const) {
  describe(`read leaks, ${mode === 'jail' ? 'bubblewrap jail' : 'CHORUS_NO_JAIL=1 (static check alone)'}`, () => {
    beforeAll(() => {
      if (mode === 'no jail') process.env.CHORUS_NO_JAIL = '1';
      else delete process.env.CHORUS_NO_JAIL;
    });
    // The mode stays inside this block: whatever runs next (shuffled or filtered) sets its own.
    afterAll(() => {
      if (saved.CHORUS_NO_JAIL === undefined) delete process.env.CHORUS_NO_JAIL;
      else process.env.CHORUS_NO_JAIL = saved.CHORUS_NO_JAIL;
    });

    for (const a of ATTACKS) {
      it(a.name, async () => {
        const r = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: a.tb() } });
        expect(r.protection.reads).toBe(mode === 'jail' ? 'jail' : 'static');
        const refused = a.refused === 'always' || (a.refused === 'unjailed' && mode === 'no jail');
        if (refused) {
          expect(r.status, r.err_msg).toBe('rejected');
          const code = mode === 'jail' ? (a.code ?? 'CHORUS-FILE') : 'CHORUS-FILE';
          expect(problemCodes(r)).toContain(code);
          const d = r.diagnostics.find((x) => x.code === code)!;
          // Positioned and actionable: the testbench's own line, a message and a fix.
          expect(d.file).toBe('tb.sv');
          expect(d.line).toBeGreaterThan(0);
          expect(d.suggestion).toBeTruthy();
          expect(r.err_msg).toMatch(/^tb\.sv:\d+:\d+: /);
        } else if (a.refused === 'never' || !a.name.startsWith('`include')) {
          // It ran (jailed, or harmless): and found nothing.
          expect(r.status, r.err_msg).toBe('success');
        }
        expect(leaks(r), JSON.stringify(r).slice(0, 2000)).toBe(false);
        expect(leaks(r.log)).toBe(false);
        // The next prompt the agent loop would send for this result.
        expect(leaks(feedbackTurn({ status: 'success', testbench: a.tb(), filename: 'tb.sv', source: 'fence' }, resultForEcho(r)))).toBe(
          false,
        );
      });
    }

    it('says in the record what was in force', async () => {
      // Its own run, not a record another test left behind: it must pass alone and in any order.
      // Jailed, this attack runs to the end (every step in the jail); unjailed, the static check refuses it.
      const attack = ATTACKS.find((a) => a.name === '$fopen of /proc/self/environ, computed')!;
      const r = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: attack.tb() } });
      expect(r.status, r.err_msg).toBe(mode === 'jail' ? 'success' : 'rejected');
      if (mode === 'jail') {
        expect(r.protection).toMatchObject({ jail: 'bubblewrap', reads: 'jail', staticCheck: true });
        expect(r.protection.sandbox).toMatchObject({
          steps: ['preprocess', 'front-end', 'c++', 'run'],
          environment: ['PWD'],
          proc: 'none',
          network: 'none',
          user: 'unprivileged',
        });
        expect(r.protection.sandbox!.filesystem).toMatch(
          /run directory \(read-write\); design directories shown read-only: 1 \(\d+ dot-entries hidden\); \d+ shared libraries \(read-only\); nothing else/,
        );
      } else {
        expect(r.protection).toMatchObject({ jail: 'none', jailReason: 'disabled by CHORUS_NO_JAIL=1', reads: 'static' });
        expect(r.protection.sandbox).toBeUndefined();
      }
    });

    it('the reward service answers every attack without the canary', async () => {
      const server: ScoreServer = await startScoreServer({ workers: 2 });
      try {
        const items = ATTACKS.filter((a) => !a.designDir).map((a) => ({
          design_files: [{ name: 'counter.sv', content: counterSrc }],
          top: 'counter',
          testbench: { name: 'tb.sv', content: a.tb() },
        }));
        const res = await fetch(`${server.url}/v1/score`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ items }),
        });
        const text = await res.text();
        expect(res.status, text.slice(0, 500)).toBe(200);
        const body = JSON.parse(text) as { results: Array<{ status: string; protection: { reads: string } }> };
        expect(body.results).toHaveLength(items.length);
        expect(body.results.every((x) => x.protection.reads === (mode === 'jail' ? 'jail' : 'static'))).toBe(true);
        expect(leaks(text)).toBe(false);
        // Its refine prompt for each record too.
        for (const rec of body.results) {
          const p = await fetch(`${server.url}/v1/refine-prompt`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ result: rec, parse_status: 'success' }),
          });
          expect(leaks(await p.text())).toBe(false);
        }
      } finally {
        await server.close(0);
      }
    });

    it('the agent loop sends the model endpoint no canary (chorus generate --endpoint)', async () => {
      const attack = ATTACKS.find((a) => a.name.includes('/proc/1/environ'))!;
      const home = ATTACKS.find((a) => a.name.includes('file in HOME'))!;
      const server = await startScriptedServer([
        fencedReply(attack.tb(), 'tb.sv'),
        fencedReply(home.tb(), 'tb.sv'),
        fencedReply(goodTb, 'tb_counter.sv'),
      ]);
      try {
        const backend = createOpenAIBackend({ baseUrl: server.url, model: 'scripted', backoffMs: 5, apiKey: process.env.OPENAI_API_KEY });
        const run = await runAgent({ backend, simulator: sim, design, info, rounds: 2 });
        expect(run.samples[0].rounds).toHaveLength(3);
        expect(server.requests).toHaveLength(3);
        for (const req of server.requests) expect(leaks(req.messages)).toBe(false);
        expect(leaks(run.samples[0].rounds.map((r) => ({ result: r.result, feedback: r.feedback })))).toBe(false);
        // The key did go where it belongs: the Authorization header.
        expect(server.authorizations[0]).toBe(`Bearer sk-${CANARY}`);
      } finally {
        await server.close();
      }
    });

    it('`chorus sim` prints no canary (human summary and --json)', async () => {
      const cli = join(repoRoot, 'dist', 'cli.js');
      const env = { HOME, OPENAI_API_KEY: `sk-${CANARY}`, CHORUS_CACHE_DIR: cacheRoot(), CHORUS_NO_JAIL: mode === 'no jail' ? '1' : '' };
      for (const name of [
        '$fopen of /proc/self/environ, computed',
        '`include of an absolute path',
        '`include of a design-directory symlink',
      ]) {
        const dir = scratchDir('chorus-cli-tb-');
        const tb = join(dir, 'tb.sv');
        writeFileSync(tb, ATTACKS.find((a) => a.name === name)!.tb());
        for (const json of [[], ['--json']]) {
          const r = await execa(
            process.execPath,
            [cli, 'sim', ...json, '--top', 'counter', '--tb', tb, '-I', DESIGN, join(DESIGN, 'counter.sv')],
            { cwd: DESIGN, reject: false, env },
          );
          expect(r.exitCode, r.stderr).not.toBe(2);
          expect(leaks(r.stdout + r.stderr)).toBe(false);
        }
      }
    });
  });
}

describe('the jail, seen from inside', () => {
  beforeAll(() => {
    delete process.env.CHORUS_NO_JAIL;
  });

  it('holds no /proc, no /etc, /home or /root', async () => {
    const probe = tbWith(`  integer fd, c; string s;
  string paths[] = '{"/etc/passwd", "/etc/hostname", "${HOME}/.secret", "${USER_BASHRC}", "${join(DESIGN, 'counter.sv')}", "${join(DESIGN, '.env')}", "${SECRET}"};
  initial begin
    fd = $fopen({"/proc/self/", "environ"}, "r"); s = "";
    if (fd != 0) while (!$feof(fd)) begin c = $fgetc(fd); if (c > 0) s = {s, c == 0 ? ";" : string'(8'(c))}; else if (c == 0) s = {s, ";"}; end
    $display("ENV[%s]", s);
    fd = $fopen({"/proc/self/", "status"}, "r");
    while (fd != 0 && !$feof(fd)) begin void'($fgets(s, fd)); if (s.substr(0, 3) == "Uid:") $display("UID %s", s); end
    foreach (paths[i]) begin fd = $fopen(paths[i], "r"); s = ""; if (fd != 0) void'($fgets(s, fd)); $display("OPEN %s %0d [%s]", paths[i], fd != 0, s); if (fd != 0) $fclose(fd); end
    fd = $fopen({"/dev/shm/", "fill"}, "w"); $display("WRITE shm %0d", fd != 0);
    fd = $fopen({"${DESIGN}", "/planted.sv"}, "w"); $display("WRITE design %0d", fd != 0);
    fd = $fopen({"mine", ".txt"}, "w"); $display("WRITE run %0d", fd != 0);
    $finish;
  end`);
    // Every path reaches $fopen computed: the jail alone judges them.
    const r = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: probe } });
    expect(r.status, r.err_msg).toBe('success');
    // No /proc at all (its environment and identity are checked from a shell in jail.test.ts).
    expect(r.log).toMatch(/^ENV\[\]$/m);
    expect(r.log).not.toMatch(/UID /);
    expect(r.log).toContain('OPEN /etc/passwd 0');
    expect(r.log).toContain('OPEN /etc/hostname 0');
    expect(r.log).toContain(`OPEN ${HOME}/.secret 0`);
    expect(r.log).toContain(`OPEN ${USER_BASHRC} 0`);
    expect(r.log).toContain(`OPEN ${SECRET} 0`);
    // The design files load (read-only); a dot-file of the design directory cannot be opened.
    expect(r.log).toContain(`OPEN ${join(DESIGN, 'counter.sv')} 1 [`);
    expect(r.log).toContain(`OPEN ${join(DESIGN, '.env')} 0 []`);
    // Writes: the run directory only (the design is read-only, /dev/shm cannot be filled).
    expect(r.log).toContain('WRITE shm 0');
    expect(r.log).toContain('WRITE design 0');
    expect(r.log).toContain('WRITE run 1');
    expect(leaks(r)).toBe(false);
  });
});
