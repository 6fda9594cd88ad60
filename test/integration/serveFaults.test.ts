// `chorus serve` under faults, on real Verilator: idempotent retries (also across a restart on the
// same port with a state directory), /healthz and /readyz, a simulation process killed mid-run
// (a service failure with its cause, never the testbench's result, and the next request scores),
// and a disk below the service's free-space limit.
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { examples, foreverCounterTb as foreverTb, read } from '../helpers.js';
import { startScoreServer, type ScoreServer } from '../../src/core/service/http.js';
import { parseExposition } from '../../src/core/service/metrics.js';

const design = [{ name: 'counter.sv', content: read(join(examples, 'counter', 'counter.sv')) }];
const goodTb = read(join(examples, 'counter', 'tb_counter.sv'));
const item = (tb: string, extra: Record<string, unknown> = {}) => ({
  design_files: design,
  top: 'counter',
  testbench: { name: 'tb.sv', content: tb },
  ...extra,
});

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const stateDir = mkdtempSync(join(tmpdir(), 'chorus-state-'));
const servers: ScoreServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close(0)));
  rmSync(stateDir, { recursive: true, force: true });
});

describe('chorus serve under faults', () => {
  it('Idempotency-Key: a retry gets the recorded answer, also after a restart on the same port; a reused key for another body is 422', async () => {
    const s = await startScoreServer({ port: 0, workers: 1, queueLimit: 4, stateDir });
    servers.push(s);
    const body = item(`// idem\n${goodTb}`);
    const first = await post(`${s.url}/v1/score`, body, { 'Idempotency-Key': 'req-1' });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotency-key')).toBe('req-1');
    const again = await post(`${s.url}/v1/score`, body, { 'Idempotency-Key': 'req-1' });
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await post(`${s.url}/v1/score`, item(`// other\n${goodTb}`), { 'Idempotency-Key': 'req-1' });
    expect(other.status).toBe(422);
    expect(JSON.parse(other.text).error).toBe('idempotency_key_reused');
    // No key: the service makes one and says which.
    const anon = await post(`${s.url}/v1/score`, body);
    expect(anon.headers.get('idempotency-key')).toMatch(/^[0-9a-f-]{36}$/);
    expect((await post(`${s.url}/v1/score`, body, { 'Idempotency-Key': 'bad key with spaces' })).status).toBe(400);
    const port = s.port;
    await s.close(0);
    const t = await startScoreServer({ port, workers: 1, queueLimit: 4, stateDir });
    servers.push(t);
    // A kept-alive socket to the old process may be dead: a client retries (same key) as it would.
    const afterRestart = await post(`${t.url}/v1/score`, body, { 'Idempotency-Key': 'req-1' }).catch(() =>
      post(`${t.url}/v1/score`, body, { 'Idempotency-Key': 'req-1' }),
    );
    expect(afterRestart.text).toBe(first.text);
    expect(afterRestart.headers.get('idempotent-replayed')).toBe('true');
    await t.close(0);
  }, 180_000);

  it('a simulation killed mid-run (SIGKILL) is a service failure with its cause; the service scores the next request', async () => {
    const s = await startScoreServer({ port: 0, workers: 1, queueLimit: 4 });
    servers.push(s);
    const h = await fetch(`${s.url}/healthz`);
    expect(h.status).toBe(200);
    const ready = await fetch(`${s.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { checks: { workers: { ok: boolean } } }).checks.workers.ok).toBe(true);

    const pending = post(`${s.url}/v1/score`, item(foreverTb, { timeout_s: 60 }), { 'Idempotency-Key': 'kill-1' });
    // The simulation's process, found through the service's process tree.
    let victim: number | undefined;
    const t0 = Date.now();
    while (!victim && Date.now() - t0 < 90_000) {
      victim = s.service.processes().find((p) => p.name === 'Vtb')?.pid;
      if (!victim) await new Promise((r) => setTimeout(r, 100));
    }
    expect(victim).toBeDefined();
    await new Promise((r) => setTimeout(r, 300));
    process.kill(victim!, 'SIGKILL');
    const killed = await pending;
    expect(killed.status).toBe(503);
    const body = JSON.parse(killed.text);
    expect(body).toMatchObject({ error: 'service_failure', cause: 'worker_killed' });
    expect(body.status).not.toBe('xrun_failed');
    // Not recorded: the retry with the same key runs again (and this time scores).
    const good = await post(`${s.url}/v1/score`, item(`// after kill\n${goodTb}`));
    expect(good.status).toBe(200);
    expect(JSON.parse(good.text).status).toBe('success');
    const metrics = parseExposition(await (await fetch(`${s.url}/metrics`)).text());
    expect(metrics.find((x) => x.name === 'chorus_service_failures_total' && x.labels.cause === 'worker_killed')?.value).toBe(1);
    await s.close(0);
    expect(s.service.processes()).toEqual([]);
  }, 180_000);

  it('a disk under the free-space limit: not ready, score work refused with 503 (cause disk_low); liveness stays 200', async () => {
    const s = await startScoreServer({ port: 0, workers: 1, queueLimit: 4, resourceLimits: { minFreeDiskBytes: 2 ** 60 } });
    servers.push(s);
    const r = await fetch(`${s.url}/readyz`);
    expect(r.status).toBe(503);
    expect(await r.json()).toMatchObject({ status: 'not_ready', cause: 'disk_low' });
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
    const refused = await post(`${s.url}/v1/score`, item(goodTb));
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(JSON.parse(refused.text)).toMatchObject({ error: 'service_failure', cause: 'disk_low' });
    await s.close(0);
    const m = await startScoreServer({ port: 0, workers: 1, queueLimit: 4, resourceLimits: { maxRssBytes: 1 } });
    servers.push(m);
    expect(await (await fetch(`${m.url}/readyz`)).json()).toMatchObject({ cause: 'memory_high' });
    await m.close(0);
  }, 60_000);
});
