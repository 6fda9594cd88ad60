// `chorus serve` in-process on real Verilator: scoring, batches, validation, design errors,
// backpressure, the protocol prompts, metrics, client aborts and graceful shutdown.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { examples, foreverCounterTb as foreverTb, read, simulateFiles } from '../helpers.js';
import { startScoreServer, type ScoreServer } from '../../src/core/service/http.js';
import { parseExposition } from '../../src/core/service/metrics.js';
import { feedbackTurn, firstTurn, defaultInstruction, parseReply } from '../../src/core/agent/protocol.js';
import type { SimResult } from '../../src/core/sim/result.js';

const counterPath = join(examples, 'counter', 'counter.sv');
const counterSrc = read(counterPath);
const goodTb = read(join(examples, 'counter', 'tb_counter.sv'));
const weakTb = read(join(examples, 'counter', 'tb_counter_weak.sv'));
const brokenTb = `\`timescale 1ns/1ps
module tb;
  logic clk = 0, rst_n = 0, en = 0, load = 0, up = 1;
  logic [7:0] din = 0;
  logic [7:0] count;
  logic wrap;
  counter uut (.*);
  initial begin
    en = 1 +;
  end
endmodule
`;

const design = [{ name: 'counter.sv', content: counterSrc }];
const item = (tb: string, extra: Record<string, unknown> = {}) => ({
  design_files: design,
  top: 'counter',
  testbench: { name: 'tb.sv', content: tb },
  ...extra,
});

async function post(url: string, body: unknown, init: RequestInit = {}): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* plain text */
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

async function waitFor(cond: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const t0 = Date.now();
  while (!(await cond())) {
    if (Date.now() - t0 > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const health = async (s: ScoreServer): Promise<any> => (await fetch(`${s.url}/v1/health`)).json();

let server: ScoreServer;
const others: ScoreServer[] = [];
beforeAll(async () => {
  server = await startScoreServer({ port: 0, workers: 2, queueLimit: 16, bodyLimitBytes: 256 * 1024, graceS: 5 });
});
afterAll(async () => {
  await Promise.all([server?.close(0), ...others.map((s) => s.close(0))]);
});

describe('POST /v1/score', () => {
  it('scores a testbench like the engine does: reward in (1,2], same coverage as a direct simulation', async () => {
    const r = await post(`${server.url}/v1/score`, item(weakTb, { coverage_target: 50 }));
    expect(r.status).toBe(200);
    const weak = r.body;
    const direct = await simulateFiles([counterPath], 'tb.sv', weakTb);
    expect(weak.status).toBe('success');
    expect(weak.reward).toBeGreaterThan(1);
    expect(weak.reward).toBeLessThanOrEqual(2);
    expect(weak.coverage).toBe(direct.coverage!.waived.overall);
    expect(weak.reward).toBe(direct.reward);
    expect(weak.passed).toBe(weak.coverage >= 0.5);
    expect(weak.coverage_breakdown.waived.tallies).toEqual(direct.coverage!.waived.tallies);
    expect(weak.cov_info.summary).toEqual(direct.cov_info!.summary);
    // DUT paths as the client named them, never the server's temp directory.
    expect(JSON.stringify(weak)).not.toMatch(/chorus-serve-/);
    expect(weak.uncovered.some((u: { file: string }) => u.file === 'counter.sv')).toBe(true);

    const full = await post(`${server.url}/v1/score`, item(goodTb));
    expect(full.status).toBe(200);
    expect(full.body).toMatchObject({ status: 'success', reward: 2, coverage: 1, passed: true, coverage_target: 100, design_cached: true });
  });

  it('a broken testbench is a normal result: reward 0, xrun_failed, the log in err_msg', async () => {
    const r = await post(`${server.url}/v1/score`, item(brokenTb));
    expect(r.status).toBe(200);
    const broken = r.body;
    expect(broken).toMatchObject({ status: 'xrun_failed', reward: 0, coverage: 0, passed: false });
    expect(broken.err_msg).toMatch(/tb\.sv:9/);
    expect(broken.diagnostics.some((d: { severity: string; origin: string }) => d.severity === 'error' && d.origin === 'testbench')).toBe(
      true,
    );
  });

  it('a batch is answered in order, design errors per item', async () => {
    const r = await post(`${server.url}/v1/score`, { items: [item(brokenTb), item(goodTb), item(goodTb, { top: 'nope' })] });
    expect(r.status).toBe(200);
    expect(r.body.results).toHaveLength(3);
    expect(r.body.results[0]).toMatchObject({ status: 'xrun_failed', reward: 0 });
    expect(r.body.results[1]).toMatchObject({ status: 'success', reward: 2 });
    expect(r.body.results[2]).toMatchObject({ error: 'design_error', status: 422, kind: 'unknown-top' });
  });

  it('a group (one design, several testbenches) gets each the answer it gets alone, in order', async () => {
    const { testbench: _t, ...shared } = item(goodTb);
    const tbs = [goodTb, brokenTb, weakTb, foreverTb, `// again\n${goodTb}`].map((content) => ({ name: 'tb.sv', content }));
    const g = await post(`${server.url}/v1/score`, { ...shared, timeout_s: 3, testbenches: tbs });
    expect(g.status).toBe(200);
    expect(g.body.results).toHaveLength(tbs.length);
    const alone = await Promise.all(tbs.map((tb) => post(`${server.url}/v1/score`, { ...shared, timeout_s: 3, testbench: tb })));
    const same = (r: Record<string, unknown>) => ({
      status: r.status,
      reward: r.reward,
      coverage: r.coverage,
      passed: r.passed,
      err_msg: r.err_msg,
      diagnostics: r.diagnostics,
    });
    g.body.results.forEach((r: Record<string, unknown>, k: number) => expect(same(r), `member ${k}`).toEqual(same(alone[k].body)));
    expect(g.body.results.map((r: { status: string }) => r.status)).toEqual(['success', 'xrun_failed', 'success', 'timeout', 'success']);
    // The group's members were built together (each result says so), the lone ones were not.
    expect(g.body.results[0].build.sharedUnit).toBeGreaterThanOrEqual(2);
    expect(alone[0].body.build.sharedUnit).toBeUndefined();
    // A design the group cannot use is answered for every member; a group beyond 64 is refused.
    const bad = await post(`${server.url}/v1/score`, { ...shared, top: 'nope', testbenches: tbs.slice(0, 2) });
    expect(bad.status).toBe(200);
    expect(bad.body.results.map((r: { kind: string }) => r.kind)).toEqual(['unknown-top', 'unknown-top']);
    const many = await post(`${server.url}/v1/score`, { ...shared, testbenches: Array.from({ length: 65 }, () => tbs[0]) });
    expect(many.status).toBe(400);
    expect(many.body.message).toMatch(/testbenches: must hold at most 64/);
  }, 120_000);

  it('422 with the DesignError kind for a wrong top or a design that does not compile', async () => {
    const r = await post(`${server.url}/v1/score`, item(goodTb, { top: 'no_such_top' }));
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ error: 'design_error', kind: 'unknown-top' });
    expect(r.body.message).toMatch(/no_such_top/);
    const syn = await post(`${server.url}/v1/score`, {
      ...item(goodTb),
      design_files: [{ name: 'counter.sv', content: 'module counter(input a);\n  assign = ;\nendmodule\n' }],
    });
    expect(syn.status).toBe(422);
    expect(syn.body.kind).toBe('syntax');
    expect(syn.body.message).toMatch(/counter\.sv:2/);
    expect(syn.body.message).not.toMatch(/chorus-serve-/);
  });

  it('400 for malformed bodies and schema errors, naming the field; 413 beyond the body limit', async () => {
    const cases: Array<[unknown, RegExp]> = [
      ['{not json', /malformed JSON/],
      ['', /empty/],
      [[1, 2], /body: must be a JSON object/],
      [{ ...item(goodTb), design_files: [] }, /design_files: must hold at least 1 file/],
      [{ ...item(goodTb), top: 5 }, /^top: must be a string/],
      [{ ...item(goodTb), testbench: { name: 'tb.sv' } }, /testbench\.content: must be a string/],
      [{ ...item(goodTb), coverage_target: 101 }, /^coverage_target: /],
      [{ ...item(goodTb), threshold: 0.5 }, /^threshold: unknown field/],
      [{ ...item(goodTb), timeout: 5 }, /timeout: unknown field/],
      [{ items: [item(goodTb), { ...item(goodTb), top: '' }] }, /items\[1\]\.top: must not be empty/],
      [{ ...item(goodTb), design_files: [{ name: '../evil.sv', content: 'x' }] }, /design_files\[0\]\.name: .*'\.\.'/],
      [{ ...item(goodTb), design_files: [{ name: 'a/../../evil.sv', content: 'x' }] }, /design_files\[0\]\.name: .*'\.\.'/],
      [{ ...item(goodTb), design_files: [{ name: '/etc/passwd', content: 'x' }] }, /design_files\[0\]\.name: .*absolute/],
      [{ ...item(goodTb), testbench: { name: 'sub/tb.sv', content: goodTb } }, /testbench\.name: .*without directories/],
      [{ ...item(goodTb), include_files: [{ name: '..', content: '' }] }, /include_files\[0\]\.name/],
    ];
    for (const [body, re] of cases) {
      const r = await post(`${server.url}/v1/score`, body);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(r.body.error).toBe('bad_request');
      expect(r.body.message).toMatch(re);
    }
    const big = await post(`${server.url}/v1/score`, item('x'.repeat(300 * 1024)));
    expect(big.status).toBe(413);
    const nf = await fetch(`${server.url}/v2/nothing`);
    expect(nf.status).toBe(404);
    await nf.text();
    const wrong = await fetch(`${server.url}/v1/score`);
    expect(wrong.status).toBe(405);
    await wrong.text();
  });

  it('/v1/refine-prompt equals feedbackTurn byte for byte', async () => {
    // The records it answers for are scored here, not taken from the tests above: it runs alone and in any order.
    const [weak, broken] = (await post(`${server.url}/v1/score`, { items: [item(weakTb, { coverage_target: 50 }), item(brokenTb)] })).body
      .results;
    expect(weak.status).toBe('success');
    expect(broken.status).toBe('xrun_failed');
    const reply = `filename: tb_counter.sv\n\`\`\`systemverilog\n${brokenTb}\`\`\`\n`;
    const r1 = await post(`${server.url}/v1/refine-prompt`, { result: broken, reply });
    expect(r1.status).toBe(200);
    expect(r1.body.content).toBe(feedbackTurn(parseReply(reply), broken as SimResult));
    expect(r1.body.content).toMatch(/Fix the xrun failure/);
    const r2 = await post(`${server.url}/v1/refine-prompt`, { result: weak, parse_status: 'success' });
    expect(r2.body.content).toBe(feedbackTurn({ status: 'success', testbench: '', filename: null, source: 'fence' }, weak as SimResult));
    expect(r2.body.content).toContain(weak.cov_info.detail);
    const r3 = await post(`${server.url}/v1/refine-prompt`, { reply: 'I cannot do that.' });
    expect(r3.body.content).toBe(feedbackTurn(parseReply('I cannot do that.'), null));
    const r4 = await post(`${server.url}/v1/refine-prompt`, { parse_status: 'bogus', result: weak });
    expect(r4.status).toBe(400);
    expect(r4.body.message).toMatch(/^parse_status/);
  });

  it('/v1/first-turn equals firstTurn', async () => {
    const r = await post(`${server.url}/v1/first-turn`, { design_files: design, top: 'counter', instance: 'dut' });
    expect(r.status).toBe(200);
    expect(r.body.messages).toEqual(firstTurn(design, [], defaultInstruction('counter', 'dut')));
    const specs = [{ name: 'spec.md', content: 'A counter.' }];
    const r2 = await post(`${server.url}/v1/first-turn`, { design_files: design, specs, instruction: 'Do it.' });
    expect(r2.body.messages).toEqual(firstTurn(design, specs, 'Do it.'));
    const r3 = await post(`${server.url}/v1/first-turn`, { design_files: design });
    expect(r3.status).toBe(400);
    expect(r3.body.message).toMatch(/^top/);
  });

  it('/v1/parse-reply equals parseReply (thinking stripped, unparsable reported, not an error)', async () => {
    for (const reply of [`<think>plan</think>\nfilename: tb_counter.sv\n\`\`\`systemverilog\n${goodTb}\`\`\`\n`, 'I cannot do that.', '']) {
      const r = await post(`${server.url}/v1/parse-reply`, { reply });
      expect(r.status).toBe(200);
      expect(r.body.parsed).toEqual(parseReply(reply));
    }
    expect((await post(`${server.url}/v1/parse-reply`, { reply: 'x' })).body.parsed.status).toBe('unparsable');
    const bad = await post(`${server.url}/v1/parse-reply`, { text: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/^text: unknown field/);
  });

  it('/v1/introspect: top candidates from the engine, ports of each module, design errors as 422', async () => {
    const one = await post(`${server.url}/v1/introspect`, { design_files: design });
    expect(one.status).toBe(200);
    expect(one.body.top_candidates).toEqual(['counter']);
    expect(one.body.top).toBe('counter');
    const counter = one.body.modules.find((m: { name: string }) => m.name === 'counter');
    expect(counter.ports.map((p: { name: string }) => p.name)).toContain('clk');
    const two = `module a(input x, output y); assign y = x; endmodule\nmodule b(input x, output y); assign y = ~x; endmodule\n`;
    const many = await post(`${server.url}/v1/introspect`, { design_files: [{ name: 'two.sv', content: two }] });
    expect(many.status).toBe(200);
    expect([...many.body.top_candidates].sort()).toEqual(['a', 'b']);
    expect(many.body.top).toBeNull();
    // A wrapper that instantiates both has exactly one candidate.
    const wrapped = `${two}module w(input x, output y1, output y2); a ua(.x(x), .y(y1)); b ub(.x(x), .y(y2)); endmodule\n`;
    expect((await post(`${server.url}/v1/introspect`, { design_files: [{ name: 'w.sv', content: wrapped }] })).body.top_candidates).toEqual(
      ['w'],
    );
    const broken = await post(`${server.url}/v1/introspect`, {
      design_files: [{ name: 'bad.sv', content: 'module bad(input x; endmodule\n' }],
    });
    expect(broken.status).toBe(422);
    expect(broken.body.kind).toBe('syntax');
    expect(broken.body.message).not.toContain('/tmp/');
    expect(broken.body.message).toContain('bad.sv');
    const nofiles = await post(`${server.url}/v1/introspect`, { design_files: [] });
    expect(nofiles.status).toBe(400);
    expect(nofiles.body.message).toMatch(/^design_files/);
  });

  it('/v1/health and /metrics (Prometheus text that parses and counts the runs)', async () => {
    const h = await health(server);
    expect(h).toMatchObject({ status: 'ok', workers: 2, queue_depth: 0, queue_limit: 16, in_flight: 0 });
    expect(h.simulator.name).toBe('verilator');
    expect(h.simulator.version).toMatch(/5\./);
    const scrape = async () => {
      const res = await fetch(`${server.url}/metrics`);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      return parseExposition(await res.text());
    };
    type Samples = Awaited<ReturnType<typeof scrape>>;
    const get = (samples: Samples, name: string, labels: Record<string, string> = {}) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    // The server is shared with the other tests of this file, which may run before this one or not
    // at all: the counters are read as increments over this test's own requests.
    const before = await scrape();
    const score = (body: unknown) => post(`${server.url}/v1/score`, body);
    expect((await score(item(weakTb))).status).toBe(200); // a run: success
    const batch = await score({ items: [item(goodTb), item(brokenTb), item(goodTb, { top: 'nope' })] });
    expect(batch.status).toBe(200); // runs: success, xrun_failed; a design error
    expect(batch.body.results.map((r: { status: unknown }) => r.status)).toEqual(['success', 'xrun_failed', 422]);
    expect((await score(item(brokenTb))).status).toBe(200); // a run: xrun_failed
    expect((await score(item(goodTb, { top: 'no_such_top' }))).status).toBe(422); // a design error
    expect((await score('{not json')).status).toBe(400);
    expect((await score({ ...item(goodTb), top: 5 })).status).toBe(400);
    const requests = 6;
    // A request is counted when its response has been written: wait for the last one's count.
    let after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) => (get(after, name, labels) ?? 0) - (get(before, name, labels) ?? 0);
    for (let i = 0; i < 100 && delta('chorus_request_duration_seconds_count', { route: '/v1/score' }) < requests; i++) {
      await new Promise((r) => setTimeout(r, 20));
      after = await scrape();
    }
    expect(delta('chorus_runs_total', { status: 'success' })).toBe(2);
    expect(delta('chorus_runs_total', { status: 'xrun_failed' })).toBe(2);
    expect(delta('chorus_failures_total', { reason: 'design_error' })).toBe(2);
    expect(get(after, 'chorus_queue_depth')).toBe(0);
    expect(get(after, 'chorus_in_flight')).toBe(0);
    expect(delta('chorus_rejected_total')).toBe(0);
    // Four runs of one design: the first may find it cached (an earlier test's), the other three do.
    expect(delta('chorus_design_cache_total', { result: 'hit' }) + delta('chorus_design_cache_total', { result: 'miss' })).toBe(4);
    expect(delta('chorus_design_cache_total', { result: 'hit' })).toBeGreaterThanOrEqual(3);
    expect(delta('chorus_request_duration_seconds_count', { route: '/v1/score' })).toBe(requests);
    expect(delta('chorus_request_duration_seconds_bucket', { route: '/v1/score', le: '+Inf' })).toBe(requests);
    expect(get(after, 'chorus_request_duration_seconds_bucket', { route: '/v1/score', le: '+Inf' })).toBe(
      get(after, 'chorus_request_duration_seconds_count', { route: '/v1/score' }),
    );
    expect(delta('chorus_http_requests_total', { route: '/v1/score', code: '200' })).toBe(3);
    expect(delta('chorus_http_requests_total', { route: '/v1/score', code: '400' })).toBe(2);
    expect(delta('chorus_http_requests_total', { route: '/v1/score', code: '422' })).toBe(1);
  });
});

describe('backpressure, client aborts, shutdown', () => {
  it('429 with Retry-After when the queue is full; a client that leaves frees its queue slot', async () => {
    const s = await startScoreServer({ port: 0, workers: 1, queueLimit: 1, graceS: 0 });
    others.push(s);
    const slow = item(foreverTb, { timeout_s: 3 });
    const a = post(`${s.url}/v1/score`, slow);
    await waitFor(async () => (await health(s)).in_flight === 1);
    const leaver = new AbortController();
    const b = post(`${s.url}/v1/score`, slow, { signal: leaver.signal }).catch((e: Error) => e);
    await waitFor(async () => (await health(s)).queue_depth === 1);
    const c = await post(`${s.url}/v1/score`, slow);
    expect(c.status).toBe(429);
    expect(Number(c.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(c.body).toMatchObject({ error: 'queue_full', queue_limit: 1 });
    // A batch bigger than the whole server can never fit: 413, not an endless 429.
    const huge = await post(`${s.url}/v1/score`, { items: [slow, slow, slow] });
    expect(huge.status).toBe(413);
    leaver.abort();
    expect(await b).toBeInstanceOf(Error);
    await waitFor(async () => (await health(s)).queue_depth === 0);
    const ra = await a;
    expect(ra.status).toBe(200);
    expect(ra.body.status).toBe('timeout');
    expect(ra.body.reward).toBe(0);
    const m = parseExposition(await (await fetch(`${s.url}/metrics`)).text());
    expect(m.find((x) => x.name === 'chorus_rejected_total')!.value).toBe(1);
    expect(m.find((x) => x.name === 'chorus_failures_total' && x.labels.reason === 'aborted_client')!.value).toBe(1);
    await s.close();
  });

  it('graceful shutdown: in-flight work within the grace finishes, the rest and newcomers get 503', async () => {
    const s = await startScoreServer({ port: 0, workers: 1, queueLimit: 4, graceS: 60 });
    others.push(s);
    const root = s.service.designs.root;
    const fast = post(`${s.url}/v1/score`, item(weakTb));
    await waitFor(async () => (await health(s)).in_flight === 1);
    const closed = s.close();
    const late = await post(`${s.url}/v1/score`, item(weakTb));
    expect(late.status).toBe(503);
    expect(late.body.error).toBe('shutting_down');
    const rf = await fast;
    expect(rf.status).toBe(200);
    expect(rf.body.status).toBe('success');
    await closed;
    expect(existsSync(root)).toBe(false);

    // Grace too short: the running and the queued request are both answered 503 with the reason.
    const t = await startScoreServer({ port: 0, workers: 1, queueLimit: 4, graceS: 1 });
    others.push(t);
    const slow = item(foreverTb, { timeout_s: 60 });
    const p1 = post(`${t.url}/v1/score`, slow);
    await waitFor(async () => (await health(t)).in_flight === 1);
    const p2 = post(`${t.url}/v1/score`, { items: [slow] });
    await waitFor(async () => (await health(t)).queue_depth === 1);
    const t0 = Date.now();
    await t.close();
    expect(Date.now() - t0).toBeLessThan(20_000);
    const [r1, r2] = await Promise.all([p1, p2]);
    expect(r1.status).toBe(503);
    expect(r1.body.message).toMatch(/grace period ended.*aborted while running/);
    expect(r2.status).toBe(503);
    expect(r2.body.message).toMatch(/aborted before it started/);
    expect(r2.body.results).toHaveLength(1);
    await expect(fetch(`${t.url}/v1/health`)).rejects.toThrow();
  });
});
