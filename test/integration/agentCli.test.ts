// `chorus generate --endpoint` and `chorus refine` as a user runs them: the built CLI in a child
// process, a scripted OpenAI-compatible server on loopback, real Verilator.
import { afterEach, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { examples, read, repoRoot, scratchDir } from '../helpers.js';
import { fencedReply, startScriptedServer, type ScriptedServer } from '../support/scriptedServer.js';

const cli = join(repoRoot, 'dist', 'cli.js');
const good = read(join(examples, 'counter', 'tb_counter.sv'));
const weak = read(join(examples, 'counter', 'tb_counter_weak.sv'));

let server: ScriptedServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

function counterDir(): string {
  const dir = scratchDir('chorus-agent-cli-');
  copyFileSync(join(examples, 'counter', 'counter.sv'), join(dir, 'counter.sv'));
  return dir;
}

describe('chorus generate with a model endpoint', () => {
  it('prints each round, stops at the target and writes the best testbench under the model file name', async () => {
    server = await startScriptedServer([fencedReply(weak, 'tb_counter_weak.sv'), fencedReply(good, 'tb_counter_full.sv'), 'unused']);
    const dir = counterDir();
    const r = await execa(
      process.execPath,
      [cli, 'generate', '--endpoint', server.url, '--model-name', 'scripted', join(dir, 'counter.sv')],
      { reject: false },
    );
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/model: scripted at http:\/\/127\.0\.0\.1:\d+\/v1/);
    expect(r.stdout).toMatch(/round 1\/4: success {2}coverage \d+\.\d+%/);
    expect(r.stdout).toMatch(/round 2\/4: success {2}coverage 100\.00%/);
    expect(r.stdout).not.toMatch(/round 3\/4/);
    expect(r.stdout).toMatch(/best: round 2, written to .*tb_counter\.sv/);
    // The best testbench is tb_<top>.sv in the run folder, whatever the model named it.
    expect(readFileSync(/written to (.*tb_counter\.sv)\n/.exec(r.stdout)![1], 'utf8')).toBe(good.trim() + '\n');
    // The model's rounds in the run folder, with the host's coverage of the best one.
    const runDir = /run folder: (\S+)/.exec(r.stdout)![1];
    for (const f of ['round-1.sv', 'round-2.sv', 'round-2.log', 'coverage.dat', 'coverage.info', 'coverage.html', 'junit.xml'])
      expect(existsSync(join(runDir, f)), f).toBe(true);
    expect(server.remaining()).toBe(1);
  });

  it('--json carries every round with its parse status, testbench and result, and the best', async () => {
    server = await startScriptedServer(['no code here', fencedReply(weak), fencedReply(weak)]);
    const dir = counterDir();
    const r = await execa(
      process.execPath,
      [
        cli,
        'generate',
        '--json',
        '--rounds',
        '2',
        '--endpoint',
        server.url,
        '--model-name',
        'scripted',
        '--out',
        join(dir, 'tb.sv'),
        join(dir, 'counter.sv'),
      ],
      { reject: false },
    );
    expect(r.exitCode).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.generator).toBe('model');
    expect(j.rounds.map((x: { parse_status: string }) => x.parse_status)).toEqual(['unparsable', 'success', 'success']);
    expect(j.rounds[0].result).toBeNull();
    expect(j.rounds[1].result.status).toBe('success');
    expect(j.best).toMatchObject({ sample: 0, round: 1 });
    expect(j.best.reward).toBeCloseTo(1 + j.best.coverage, 10);
    expect(j.samples[0].stop).toBe('rounds');
    expect(readFileSync(join(dir, 'tb.sv'), 'utf8')).toBe(j.rounds[1].testbench + '\n');
  });

  it('says the server is down, and how to fix it, with exit code 2', async () => {
    const dir = counterDir();
    // A port that was free a moment ago: nothing listens there.
    const probe = await startScriptedServer([]);
    const url = probe.url;
    await probe.close();
    const r = await execa(process.execPath, [cli, 'generate', '--endpoint', url, '--model-name', 'm', join(dir, 'counter.sv')], {
      reject: false,
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(`model error (connection): cannot reach the model server at ${url} (connection refused). Start the server`);
    expect(existsSync(join(dir, 'tb_counter.sv'))).toBe(false);
  });

  it('rejects contradictory model options', async () => {
    const r = await execa(
      process.execPath,
      [cli, 'generate', '--endpoint', 'http://127.0.0.1:9', join(examples, 'counter', 'counter.sv')],
      { reject: false },
    );
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/--endpoint needs --model-name/);
  });
});

describe('chorus refine', () => {
  it('revises a testbench from a Verilator error log and checks the revision', async () => {
    server = await startScriptedServer([fencedReply(good, 'tb_counter.sv')]);
    const dir = counterDir();
    writeFileSync(join(dir, 'tb.sv'), weak);
    writeFileSync(
      join(dir, 'sim.log'),
      "%Error: tb.sv:12:5: Can't find definition of variable: 'cnt'\n%Error: Exiting due to 1 error(s)\n",
    );
    const r = await execa(
      process.execPath,
      [
        cli,
        'refine',
        '--tb',
        join(dir, 'tb.sv'),
        '--log',
        join(dir, 'sim.log'),
        '--endpoint',
        server.url,
        '--model-name',
        'scripted',
        join(dir, 'counter.sv'),
      ],
      { reject: false },
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/revision written to .*tb_refined\.sv/);
    // The model's revision, its module named as the testbench it refines (refinement.ts keepModuleName).
    expect(r.stdout).toContain("note: the revision's module tb_counter is named tb_counter_weak, as the testbench it refines");
    expect(readFileSync(/revision written to (.*)\n/.exec(r.stdout)![1], 'utf8')).toBe(
      good.trim().replace('module tb_counter;', 'module tb_counter_weak;') + '\n',
    );
    expect(readFileSync(join(dir, 'tb.sv'), 'utf8')).toBe(weak); // the original is untouched
    const m = server.requests[0].messages;
    expect(m.map((x) => x.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(m[3].content).toMatch(/- stage: xrun\n- log: %Error: tb.sv:12:5/);
    expect(r.stdout).toMatch(/coverage of counter: 100\.00%/);
  });

  it('simulates the testbench itself when no log is given and reports the coverage change', async () => {
    server = await startScriptedServer([fencedReply(good)]);
    const dir = counterDir();
    writeFileSync(join(dir, 'tb.sv'), weak);
    const r = await execa(
      process.execPath,
      [cli, 'refine', '--tb', join(dir, 'tb.sv'), '--endpoint', server.url, '--model-name', 'scripted', join(dir, 'counter.sv')],
      { reject: false },
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/coverage: \d+\.\d+% -> 100\.00%/);
    expect(server.requests[0].messages[3].content).toContain('- coverage: ');
  });

  it('falls back to the built-in generator without a model, saying so (test/integration/refinement.test.ts)', async () => {
    const dir = counterDir();
    writeFileSync(join(dir, 'tb.sv'), weak);
    const r = await execa(process.execPath, [cli, 'refine', '--tb', join(dir, 'tb.sv'), join(dir, 'counter.sv')], { reject: false });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/note: no model configured: the built-in model-free generator refines the testbench/);
    expect(existsSync(/revision written to (.*)\n/.exec(r.stdout)![1])).toBe(true);
  });
});
