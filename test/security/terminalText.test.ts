// Terminal control sequences: a testbench's $display / $error text, and a model's reply, are data.
// A testbench on examples/counter prints a clear-screen, cursor-up + erase-line (which would
// overwrite our own status line), OSC 52 clipboard writes (BEL- and ST-terminated), a C1 CSI, a
// carriage return and a bidi override (NUL: the unit tests; Verilator's own output stops at one).
// None of those characters may reach the result record, `chorus sim`'s output (plain and --json),
// the reward service's /v1/score answer, the feedback prompt the agent loop sends the model, or
// `chorus generate --stream`'s echo of a model reply. They arrive as visible escapes (`\x1b[2J`),
// so an engineer still sees what was printed. Jailed and with CHORUS_NO_JAIL=1. The rule itself:
// src/core/util/untrusted.ts, test/unit/untrusted.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { counterTb, examples, read, repoRoot, scratchDir } from '../helpers.js';
import { loadDesign } from '../../src/core/run/design.js';
import { VerilatorSimulator } from '../../src/core/sim/verilator/backend.js';
import { cacheRoot } from '../../src/core/util/cache.js';
import { runAgent } from '../../src/core/agent/loop.js';
import { createOpenAIBackend } from '../../src/core/llm/openai.js';
import { startScoreServer } from '../../src/core/service/http.js';
import type { DesignInfo, DesignSpec } from '../../src/core/design/types.js';
import { fencedReply, startScriptedServer } from '../support/scriptedServer.js';

/** A raw character no terminal, editor or prompt may get: C0 but newline and tab (ESC, BEL, CR,
 * NUL...), DEL, C1 (CSI U+009B...), bidi embeddings/overrides/isolates, zero-width characters. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/;

/** The first string anywhere in `x` that holds a raw character, with its path; null when none. */
function rawIn(x: unknown, path = '$'): string | null {
  if (typeof x === 'string')
    return RAW.test(x) ? `${path}: ${JSON.stringify(x.slice(Math.max(0, x.search(RAW) - 40), x.search(RAW) + 40))}` : null;
  if (Array.isArray(x)) {
    for (let i = 0; i < x.length; i++) {
      const r = rawIn(x[i], `${path}[${i}]`);
      if (r) return r;
    }
    return null;
  }
  if (x && typeof x === 'object') {
    for (const [k, v] of Object.entries(x)) {
      const r = rawIn(v, `${path}.${k}`) ?? (RAW.test(k) ? `${path} key ${JSON.stringify(k)}` : null);
      if (r) return r;
    }
  }
  return null;
}

/** SystemVerilog string escapes (octal): ESC, BEL, CR, and UTF-8 for U+009B (C1 CSI) and U+202E. */
const ESC = '\\033';
const BEL = '\\007';
const CR = '\\015';
const C1_CSI = '\\302\\233';
const RLO = '\\342\\200\\256';

/** Prints every sequence class with $display and $write, and fails an $error carrying them too. */
const hostileTb = counterTb(`  always #5 clk = ~clk;
  initial begin
    #12 rst_n = 1; en = 1;
    repeat (20) @(negedge clk);
    $display("${ESC}[2J${ESC}[Hscreen cleared");
    $display("${ESC}[1A${ESC}[2Kchorus: status: success  reward: 2.0000");
    $display("${ESC}]52;c;aGk=${BEL}clipboard (BEL)");
    $display("${ESC}]52;c;aGk=${ESC}\\\\clipboard (ST)");
    $display("${C1_CSI}2Jc1 csi");
    $display("PASS${CR}FAIL overwritten");
    $display("bidi ${RLO}vs.tset${'\\342\\200\\254'}");
    $error("${ESC}[2J${ESC}[1A${ESC}[2K${ESC}]52;c;aGk=${BEL}${C1_CSI}2J${CR}${RLO} hostile error");
    $finish;
  end
`);

/** What a terminal would make of our own output: SGR colour codes (ours, FORCE_COLOR) removed. */
const withoutOwnColour = (s: string): string => s.replace(/\x1b\[\d+(;\d+)*m/g, '');

const sim = new VerilatorSimulator();
const counterSrc = read(join(examples, 'counter', 'counter.sv'));
const saved = process.env.CHORUS_NO_JAIL;
let design: DesignSpec;
let info: DesignInfo;
let DESIGN = '';

beforeAll(async () => {
  DESIGN = scratchDir('chorus-term-design-');
  writeFileSync(join(DESIGN, 'counter.sv'), counterSrc);
  ({ design, info } = await loadDesign({ files: [join(DESIGN, 'counter.sv')], top: 'counter' }));
});

afterAll(() => {
  if (saved === undefined) delete process.env.CHORUS_NO_JAIL;
  else process.env.CHORUS_NO_JAIL = saved;
});

for (const mode of ['jail', 'no jail'] as const) {
  describe(`terminal control sequences from a testbench, ${mode === 'jail' ? 'bubblewrap jail' : 'CHORUS_NO_JAIL=1'}`, () => {
    beforeAll(() => {
      if (mode === 'no jail') process.env.CHORUS_NO_JAIL = '1';
      else delete process.env.CHORUS_NO_JAIL;
    });

    it('the result record holds visible escapes, never the raw characters', async () => {
      const r = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: hostileTb } });
      expect(r.protection.jail).toBe(mode === 'jail' ? 'bubblewrap' : 'none');
      expect(r.status, r.err_msg).toBe('success');
      expect(rawIn(r)).toBeNull();
      // What was printed is still there to read.
      expect(r.log).toContain('\\x1b[2J\\x1b[Hscreen cleared');
      expect(r.log).toContain('\\x1b[1A\\x1b[2Kchorus: status: success');
      expect(r.log).toContain('\\x1b]52;c;aGk=\\x07clipboard (BEL)');
      expect(r.log).toContain('\\x1b]52;c;aGk=\\x1b\\clipboard (ST)');
      expect(r.log).toContain('\\x9b2Jc1 csi');
      expect(r.log).toContain('PASS\\x0dFAIL overwritten');
      expect(r.log).toContain('bidi \\u202evs.tset\\u202c');
      const err = r.diagnostics.find((d) => d.severity === 'error' && d.message.includes('hostile error'));
      expect(err, JSON.stringify(r.diagnostics)).toBeDefined();
      expect(err!.message).toContain('\\x1b[2J\\x1b[1A\\x1b[2K\\x1b]52;c;aGk=\\x07\\x9b2J\\x0d\\u202e hostile error');
    });

    it('`chorus sim` prints none of them: plain summary (with and without colour) and --json', async () => {
      const cli = join(repoRoot, 'dist', 'cli.js');
      const dir = scratchDir('chorus-term-cli-');
      const tb = join(dir, 'tb.sv');
      writeFileSync(tb, hostileTb);
      const base = { CHORUS_CACHE_DIR: cacheRoot(), CHORUS_NO_JAIL: mode === 'no jail' ? '1' : '' };
      const args = ['sim', '--top', 'counter', '--tb', tb, join(DESIGN, 'counter.sv')];
      const plain = await execa(process.execPath, [cli, ...args], {
        reject: false,
        env: { ...base, NO_COLOR: '1', FORCE_COLOR: undefined },
      });
      expect(plain.exitCode, plain.stderr).toBe(0);
      expect(plain.stdout).toContain('hostile error');
      expect(plain.stdout).toContain('\\x1b]52;c;aGk=\\x07');
      expect(rawIn(plain.stdout + plain.stderr)).toBeNull();
      // Colour on: our own SGR codes are the only escape sequences on the terminal.
      const coloured = await execa(process.execPath, [cli, ...args], { reject: false, env: { ...base, NO_COLOR: '', FORCE_COLOR: '1' } });
      expect(coloured.stdout).toMatch(/\x1b\[\d+m/);
      expect(rawIn(withoutOwnColour(coloured.stdout + coloured.stderr))).toBeNull();
      const json = await execa(process.execPath, [cli, ...args, '--json'], { reject: false, env: { ...base, NO_COLOR: '1' } });
      expect(json.exitCode, json.stderr).toBe(0);
      expect(rawIn(json.stdout + json.stderr)).toBeNull();
      const rec = JSON.parse(json.stdout) as { log: string };
      expect(rawIn(rec)).toBeNull();
      expect(rec.log).toContain('\\x1b[2J');
    });

    it('the reward service answers none of them, nor its refine prompt', async () => {
      const server = await startScoreServer({ workers: 1 });
      try {
        const res = await fetch(`${server.url}/v1/score`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({
            design_files: [{ name: 'counter.sv', content: counterSrc }],
            top: 'counter',
            testbench: { name: 'tb.sv', content: hostileTb },
          }),
        });
        const text = await res.text();
        expect(res.status, text.slice(0, 500)).toBe(200);
        expect(rawIn(text)).toBeNull();
        const rec = JSON.parse(text) as { status: string; log: string };
        expect(rec.status).toBe('success');
        expect(rawIn(rec)).toBeNull();
        expect(rec.log).toContain('\\x1b[1A\\x1b[2K');
        // A trainer's own record, raw sequences and all, comes back as a clean prompt.
        const p = await fetch(`${server.url}/v1/refine-prompt`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({
            result: { ...rec, status: 'xrun_failed', err_msg: 'tb.sv:3: \x1b[2J\x1b]52;c;aGk=\x07\u009b\r\u202e boom' },
            parse_status: 'success',
          }),
        });
        const prompt = (await p.json()) as { content: string };
        expect(prompt.content).toContain('\\x1b[2J\\x1b]52;c;aGk=\\x07\\x9b\\x0d\\u202e boom');
        expect(rawIn(prompt)).toBeNull();
      } finally {
        await server.close(0);
      }
    });

    it('the agent loop sends the model none of them', async () => {
      const server = await startScriptedServer([
        fencedReply(hostileTb, 'tb.sv'),
        fencedReply(read(join(examples, 'counter', 'tb_counter.sv')), 'tb_counter.sv'),
      ]);
      try {
        const backend = createOpenAIBackend({ baseUrl: server.url, model: 'scripted', backoffMs: 5 });
        const run = await runAgent({ backend, simulator: sim, design, info, rounds: 1, coverageTarget: 200 });
        const rounds = run.samples[0].rounds;
        expect(rounds).toHaveLength(2);
        expect(rounds[0].result?.status).toBe('success');
        // The second request carries the feedback turn for the hostile testbench.
        expect(server.requests).toHaveLength(2);
        const feedback = server.requests[1].messages.at(-1)!.content;
        expect(feedback).toContain('EDA result:');
        expect(rawIn(feedback)).toBeNull();
        expect(rawIn(rounds.map((r) => ({ result: r.result, feedback: r.feedback })))).toBeNull();
      } finally {
        await server.close();
      }
    });
  });
}

describe("a model's reply echoed to the terminal", () => {
  it('`chorus generate --stream` writes it as text', async () => {
    const cli = join(repoRoot, 'dist', 'cli.js');
    const reply = fencedReply(
      read(join(examples, 'counter', 'tb_counter.sv')),
      'tb_counter.sv',
      'Here it is\x1b[2J\x1b[1A\x1b[2K\x1b]52;c;aGk=\x07\u009b2J\rOVERWRITE\u202e\n',
    );
    const server = await startScriptedServer([reply]);
    try {
      const out = join(scratchDir('chorus-term-gen-'), 'tb_out.sv');
      const r = await execa(
        process.execPath,
        [
          cli,
          'generate',
          '--endpoint',
          server.url,
          '--model-name',
          'scripted',
          '--stream',
          '--rounds',
          '0',
          '--out',
          out,
          join(DESIGN, 'counter.sv'),
        ],
        { reject: false, env: { CHORUS_CACHE_DIR: cacheRoot(), NO_COLOR: '1', FORCE_COLOR: undefined } },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stderr).toContain('Here it is\\x1b[2J\\x1b[1A\\x1b[2K\\x1b]52;c;aGk=\\x07\\x9b2J\\x0dOVERWRITE\\u202e');
      expect(rawIn(r.stdout + r.stderr)).toBeNull();
    } finally {
      await server.close();
    }
  });
});
