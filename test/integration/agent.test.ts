// The agent loop end to end: the real HTTP backend against scripted replies, the real Verilator
// engine, the protocol's feedback turns. Exercises each branch: broken testbench, no code block,
// thinking block, weak then good testbench, model timeout, cancel, context budget, refinement
// from a user's log.
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { examples, read } from '../helpers.js';
import { loadDesign } from '../../src/core/run/design.js';
import { getSimulator } from '../../src/core/sim/registry.js';
import { createOpenAIBackend } from '../../src/core/llm/openai.js';
import { ContextBudgetError, designContext, refineMessages, refineOnce, runAgent } from '../../src/core/agent/loop.js';
import { feedbackTurn, firstTurn, defaultInstruction, SYSTEM_PROMPT, OUTPUT_FORMAT_REQ } from '../../src/core/agent/protocol.js';
import type { AgentEvent } from '../../src/core/agent/types.js';
import type { DesignInfo, DesignSpec } from '../../src/core/design/types.js';
import { fencedReply, startScriptedServer, type ScriptedServer } from '../support/scriptedServer.js';

const counter = join(examples, 'counter', 'counter.sv');
const good = read(join(examples, 'counter', 'tb_counter.sv'));
const weak = read(join(examples, 'counter', 'tb_counter_weak.sv'));
const broken = `module tb_counter;\n  logic clk\n  counter uut(.clk(clk));\nendmodule`;

let design: DesignSpec;
let info: DesignInfo;
const simulator = getSimulator('verilator');
let server: ScriptedServer | null = null;

beforeAll(async () => {
  ({ design, info } = await loadDesign({ files: [counter] }));
});
afterEach(async () => {
  await server?.close();
  server = null;
});

const backend = (opts: Partial<Parameters<typeof createOpenAIBackend>[0]> = {}) =>
  createOpenAIBackend({ baseUrl: server!.url, model: 'scripted', backoffMs: 5, ...opts });

describe('agent loop', () => {
  it('refines through a broken testbench and an unparsable reply to 100% (memoryless)', async () => {
    server = await startScriptedServer([
      `<think>\nlet me think\n</think>\n\n${fencedReply(broken, 'tb_counter.sv')}`,
      'Sorry, I cannot help with that.',
      fencedReply(weak, 'tb_counter_weak.sv'),
      fencedReply(good, 'tb_counter.sv'),
      fencedReply(good, 'never-used.sv'),
    ]);
    const events: AgentEvent[] = [];
    const run = await runAgent({ backend: backend(), simulator, design, info, rounds: 3, onEvent: (e) => events.push(e) });
    const s = run.samples[0];
    expect(s.rounds.map((r) => r.parsed.status)).toEqual(['success', 'unparsable', 'success', 'success']);
    expect(s.rounds.map((r) => r.result?.status ?? null)).toEqual(['xrun_failed', null, 'success', 'success']);
    expect(s.rounds[2].result!.coverage!.waived.overall).toBeLessThan(1);
    expect(s.rounds[3].result!.coverage!.waived.overall).toBe(1);
    expect(s.best).toBe(3);
    expect(s.passed).toBe(true);
    expect(s.stop).toBe('target');
    expect(run.best).toEqual({ sample: 0, round: 3 });
    expect(server.remaining()).toBe(1); // stopped early at the target

    // First turn is the protocol's, byte for byte, with the design as the model sees it.
    const first = firstTurn(designContext(design), [], defaultInstruction('counter', 'uut'));
    expect(server.requests[0].messages).toEqual(first);
    expect(first[1].content).toContain('// File: counter.sv\n');
    // Round 1 sees the broken candidate (thinking stripped) and its xrun feedback.
    const r1 = server.requests[1].messages;
    expect(r1).toHaveLength(4);
    expect(r1[2].content.startsWith('filename: tb_counter.sv')).toBe(true);
    expect(r1[2].content).not.toContain('<think>');
    expect(r1[3].content).toBe(s.rounds[0].feedback);
    expect(r1[3].content).toMatch(
      /^Response parse result:\n- status: success\n- type: file\n\nEDA result:\n- status: xrun_failed\n- stage: xrun\n- log: /,
    );
    expect(
      r1[3].content.endsWith('Instruction for next round:\nFix the xrun failure by editing the testbench.' + OUTPUT_FORMAT_REQ.trimEnd()),
    ).toBe(true);
    // Round 2: the unparsable reply is not the best, so the memoryless snapshot did not move.
    expect(server.requests[2].messages).toEqual(r1);
    expect(s.rounds[1].feedback).toMatch(
      /^Response parse result:\n- status: success\n- type: file\n\nEDA result:\n- status: failed \(could not extract a valid testbench/,
    );
    // Round 3: the weak testbench became the best; its coverage report is the feedback.
    const r3 = server.requests[3].messages;
    expect(r3).toHaveLength(4);
    expect(r3[3].content).toBe(feedbackTurn(s.rounds[2].parsed, s.rounds[2].result));
    expect(r3[3].content).toContain('- status: success\n- stage: success\n- coverage: ');
    expect(r3[3].content).toContain('Improve coverage toward 100% by editing the testbench.');
    // Events in order for the editor.
    expect(events.filter((e) => e.type === 'round-end').map((e) => (e as { round: number }).round)).toEqual([0, 1, 2, 3]);
    expect(events.some((e) => e.type === 'text')).toBe(true);
    expect(run.tokens.completion).toBeGreaterThan(0);
  });

  it('keeps every turn in full-history mode', async () => {
    server = await startScriptedServer([fencedReply(broken), fencedReply(weak), fencedReply(weak)]);
    const run = await runAgent({ backend: backend(), simulator, design, info, rounds: 2, history: 'full' });
    expect(run.samples[0].rounds).toHaveLength(3);
    expect(server.requests.map((r) => r.messages.length)).toEqual([2, 4, 6]);
    expect(server.requests[2].messages[0].content).toBe(SYSTEM_PROMPT);
    expect(run.samples[0].stop).toBe('rounds');
    expect(run.samples[0].passed).toBe(false);
  });

  it('runs several samples and picks the best over all of them', async () => {
    // Sample 0 always writes the weak testbench, sample 1 the good one (by the sampling seed).
    server = await startScriptedServer(Array.from({ length: 8 }, () => (req) => fencedReply((req.seed ?? 0) >= 1000 ? good : weak)));
    const run = await runAgent({
      backend: backend(),
      simulator,
      design,
      info,
      rounds: 1,
      samples: 2,
      sampling: { seed: 0 },
      simConcurrency: 2,
    });
    expect(run.samples).toHaveLength(2);
    expect(run.samples[0].passed).toBe(false);
    expect(run.samples[1].passed).toBe(true);
    expect(run.best?.sample).toBe(1);
    expect(server.requests.map((r) => r.seed).sort((a, b) => a! - b!)).toEqual([0, 1, 1000]);
  });

  it('keeps the best so far when the model times out, and says why it stopped', async () => {
    server = await startScriptedServer([fencedReply(weak), { hang: true }]);
    const run = await runAgent({ backend: backend({ timeoutMs: 500, maxRetries: 0 }), simulator, design, info, rounds: 3 });
    const s = run.samples[0];
    expect(s.stop).toBe('model-error');
    expect(s.rounds[1].error?.kind).toBe('timeout');
    expect(s.best).toBe(0);
  });

  it('stops cleanly when cancelled mid-reply', async () => {
    server = await startScriptedServer([{ text: fencedReply(good).repeat(20), chunkDelayMs: 10 }]);
    const ac = new AbortController();
    const run = await runAgent({
      backend: backend(),
      simulator,
      design,
      info,
      signal: ac.signal,
      onEvent: (e) => e.type === 'text' && ac.abort(),
    });
    expect(run.cancelled).toBe(true);
    expect(run.samples[0].stop).toBe('cancelled');
    expect(run.samples[0].rounds).toHaveLength(0);
  });

  it('refuses a design that does not fit the context, naming files and limit', async () => {
    server = await startScriptedServer([], { maxModelLen: 1200 });
    const err = await runAgent({ backend: backend(), simulator, design, info }).catch((e) => e);
    expect(err).toBeInstanceOf(ContextBudgetError);
    expect(err.message).toMatch(/context is 1200 tokens/);
    expect(err.message).toMatch(/counter\.sv: \d+ tokens/);
  });

  it('fails fast with the server message when the model name is wrong', async () => {
    server = await startScriptedServer([], { models: ['other'] });
    await expect(runAgent({ backend: backend(), simulator, design, info })).rejects.toThrow(/does not serve a model named 'scripted'/);
  });
});

describe('refine one step', () => {
  it('builds [system, user, the testbench as a reply, feedback from a Verilator log]', () => {
    const log = `%Warning-WIDTH: tb.sv:3:7: Operator ASSIGN expects 8 bits\n%Error: tb.sv:9:3: Cannot find file containing module: 'countr'\n%Error: Exiting due to 1 error(s)\n`;
    const m = refineMessages({ design, top: 'counter', testbench: { name: 'tb.sv', content: weak }, feedback: { log } });
    expect(m.map((x) => x.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(m[2].content).toBe(`filename: tb.sv\n\`\`\`systemverilog\n${weak.trim()}\n\`\`\``);
    expect(m[3].content).toMatch(/- status: xrun_failed\n- stage: xrun\n- log: %Error: tb.sv:9:3: Cannot find file/);
    expect(m[3].content).toContain('Fix the xrun failure');
  });

  it('treats an IMC coverage report as a success and asks for more coverage', () => {
    const log = read(join(examples, '..', 'test', 'fixtures', 'imc', 'llm4cov_example.txt'));
    const m = refineMessages({ design, top: 'counter', testbench: { name: 'tb.sv', content: weak }, feedback: { log } });
    expect(m[3].content).toContain('- status: success\n- stage: success\n- coverage: ');
    expect(m[3].content).toContain('Improve coverage toward 100%');
  });

  it('returns the revised testbench from the model', async () => {
    server = await startScriptedServer([fencedReply(good, 'tb_counter_v2.sv')]);
    const weakResult = await simulator.simulate({ design, top: 'counter', testbench: { name: 'tb_counter_weak.sv', content: weak } });
    const out = await refineOnce({
      backend: backend(),
      design,
      top: 'counter',
      testbench: { name: 'tb_counter_weak.sv', content: weak },
      feedback: { result: weakResult },
    });
    expect(out.parsed.status).toBe('success');
    expect(out.filename).toBe('tb_counter_v2.sv');
    expect(out.testbench).toBe(good.trim());
    expect(server.requests[0].messages[3].content).toBe(
      feedbackTurn({ status: 'success', testbench: weak, filename: 'tb_counter_weak.sv', source: 'fence' }, weakResult),
    );
  });
});
