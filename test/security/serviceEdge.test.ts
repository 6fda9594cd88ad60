// Issue 40, the reward service at the edge: an oversized body gets a 413 with a JSON body (not a
// dropped connection); no answer names a host path or the service's pid; slow clients (one byte
// at a time, or headers never finished) are closed within 15 s while a normal request goes on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import { request } from 'node:http';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { examples, read } from '../helpers.js';
import { startScoreServer, type ScoreServer } from '../../src/core/service/http.js';
import { cacheRoot } from '../../src/core/util/cache.js';

let server: ScoreServer;
const counterSrc = read(join(examples, 'counter', 'counter.sv'));
const tb = read(join(examples, 'counter', 'tb_counter_weak.sv'));

beforeAll(async () => {
  server = await startScoreServer({ workers: 2, bodyLimitBytes: 2 * 1024 * 1024, slowClientTimeoutS: 3 });
});
afterAll(() => server.close(0));

/** A POST through node:http, the body sent in full before the answer is read (as clients do). */
function post(path: string, body: Buffer): Promise<{ status: number; text: string; error?: string }> {
  return new Promise((resolve) => {
    const req = request(
      `${server.url}${path}`,
      { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': body.length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', (e) => resolve({ status: 0, text: '', error: e.message }));
    req.end(body);
  });
}

/** Host facts no answer may hold. */
function hostFacts(): string[] {
  return [tmpdir(), homedir(), process.cwd(), cacheRoot(), `tmp-${process.pid}`, `designs-${process.pid}-`, `"pid"`].filter(
    (s) => s.length > 1,
  );
}

describe('the reward service at the edge', () => {
  it('answers an oversized body with 413 and a JSON body, then takes the next request', async () => {
    const big = Buffer.alloc(9 * 1024 * 1024, 0x20);
    const r = await post('/v1/score', big);
    expect(r.error).toBeUndefined();
    expect(r.status).toBe(413);
    expect(JSON.parse(r.text)).toMatchObject({ error: 'body_too_large' });
    expect(JSON.parse(r.text).message).toMatch(/2097152 bytes/);
    const ok = await fetch(`${server.url}/healthz`);
    expect(ok.status).toBe(200);
  }, 60_000);

  it('names no host path and no pid in any answer', async () => {
    const texts: string[] = [];
    for (const p of ['/readyz', '/v1/health', '/healthz']) texts.push(await (await fetch(`${server.url}${p}`)).text());
    const score = await fetch(`${server.url}/v1/score`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        items: [{ design_files: [{ name: 'counter.sv', content: counterSrc }], top: 'counter', testbench: { name: 'tb.sv', content: tb } }],
      }),
    });
    const scored = await score.text();
    expect(score.status, scored.slice(0, 300)).toBe(200);
    expect(JSON.parse(scored).results[0].status).toBe('success');
    texts.push(scored);
    for (const t of texts) for (const f of hostFacts()) expect(t, `answer holds '${f}'`).not.toContain(f);
  }, 120_000);

  it('closes 200 slow clients within 15 s while a normal request goes on', async () => {
    const sockets: Socket[] = [];
    const closedAt: number[] = [];
    const t0 = Date.now();
    for (let i = 0; i < 200; i++) {
      const s = connect(server.port, '127.0.0.1');
      s.on('error', () => {});
      s.on('close', () => closedAt.push(Date.now() - t0));
      // Half never finish their headers (a header value grows a byte a second); half send a
      // body one byte a second.
      s.write(
        i % 2
          ? 'POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{'
          : 'GET /readyz HTTP/1.1\r\nHost: x\r\nX-Slow: ',
      );
      sockets.push(s);
    }
    const drip = setInterval(() => {
      for (const s of sockets) if (!s.destroyed) s.write('a');
    }, 1000);
    try {
      const normal = await fetch(`${server.url}/v1/health`);
      expect(normal.status).toBe(200);
      while (closedAt.length < 200 && Date.now() - t0 < 15_000) await new Promise((r) => setTimeout(r, 250));
      expect(closedAt.length).toBe(200);
      expect(Math.max(...closedAt)).toBeLessThanOrEqual(15_000);
    } finally {
      clearInterval(drip);
      for (const s of sockets) s.destroy();
    }
  }, 60_000);
});
