// The reward service's resilience parts without a simulator: idempotent answer store (bounds,
// TTL, disk, one answer per key), in-flight sharing, service failures from machine errors, and
// the remote client's retries, failover and return of a service whose health comes back (a fake
// service on loopback that fails, then recovers).
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AnswerStore, InFlight } from '../../src/core/service/idempotency.js';
import { ScoreService, machineFailure } from '../../src/core/service/scoreService.js';
import { descendants } from '../../src/core/util/proc.js';
import { RemoteSimulator } from '../../src/core/sim/remote.js';
import type { Simulator } from '../../src/core/sim/simulator.js';

const dirs: string[] = [];
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'chorus-resil-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const answer = (body: string, fingerprint = 'f') => ({ status: 200, body, fingerprint, at: Date.now() });

describe('AnswerStore', () => {
  it('replays, bounds memory by bytes (LRU) and forgets after the TTL', () => {
    const s = new AnswerStore({ maxBytes: 3 * (100 + 1 + 128) });
    for (const k of ['a', 'b', 'c']) s.put(k, answer('x'.repeat(100)));
    expect(s.get('a')?.body).toHaveLength(100); // a is now the most recent
    s.put('d', answer('y'.repeat(100)));
    expect(s.get('b')).toBeUndefined(); // least recently used went
    expect(s.get('a')).toBeDefined();
    expect(s.memoryBytes).toBeLessThanOrEqual(s.maxBytes);
    const t = new AnswerStore({ ttlS: 0.001 });
    t.put('k', { ...answer('z'), at: Date.now() - 1000 });
    expect(t.get('k')).toBeUndefined();
  });

  it('on disk: a new store on the same directory replays, and the first recorded answer wins', () => {
    const dir = tmp();
    const a = new AnswerStore({ dir });
    a.put('key-1', answer('{"reward":1.5}', 'fp'));
    const b = new AnswerStore({ dir }); // a restart
    expect(b.get('key-1')).toMatchObject({ status: 200, body: '{"reward":1.5}', fingerprint: 'fp' });
    // Two instances sharing the directory: the second to record gets the first's answer back.
    const c = new AnswerStore({ dir });
    const kept = c.put('key-2', answer('{"first":true}'));
    const other = new AnswerStore({ dir }).put('key-2', answer('{"second":true}'));
    expect(kept.body).toBe('{"first":true}');
    expect(other.body).toBe('{"first":true}');
  });

  it('pruning keeps the newest maxDiskEntries, drops expired records and old crashed temporaries; startup and background agree', async () => {
    const fill = (dir: string): AnswerStore => {
      const s = new AnswerStore({ dir, maxDiskEntries: 3 });
      const now = Date.now() / 1000;
      for (let i = 0; i < 5; i++) s.put(`k${i}`, answer(`{"i":${i}}`));
      const files = readdirSync(join(dir, 'answers')).filter((f) => f.endsWith('.json'));
      // Ages by key: k0 oldest ... k4 newest (a minute apart), plus a crashed write from an hour ago.
      for (let i = 0; i < 5; i++) {
        const f = files.find((n) => readFileSync(join(dir, 'answers', n), 'utf8').includes(`"k${i}"`))!;
        utimesSync(join(dir, 'answers', f), now - 60 * (5 - i), now - 60 * (5 - i));
      }
      writeFileSync(join(dir, 'answers', 'x.json.1.abc.tmp'), '{');
      utimesSync(join(dir, 'answers', 'x.json.1.abc.tmp'), now - 3600, now - 3600);
      return s;
    };
    const kept = (dir: string): string[] =>
      readdirSync(join(dir, 'answers'))
        .map((n) => readFileSync(join(dir, 'answers', n), 'utf8'))
        .map((t) => /"key":"(k\d)"/.exec(t)?.[1] ?? t)
        .sort();
    const bg = tmp();
    await fill(bg).pruneInBackground();
    expect(kept(bg)).toEqual(['k2', 'k3', 'k4']);
    const atStart = tmp();
    fill(atStart);
    new AnswerStore({ dir: atStart, maxDiskEntries: 3 }); // a restart prunes synchronously
    expect(kept(atStart)).toEqual(['k2', 'k3', 'k4']);
    // A record past its age goes whatever the count.
    const old = tmp();
    fill(old);
    await new AnswerStore({ dir: old, ttlS: 150, maxDiskEntries: 3 }).pruneInBackground();
    expect(kept(old)).toEqual(['k3', 'k4']);
  });

  it('a state directory that cannot be written keeps the answer in memory', () => {
    const dir = tmp();
    const s = new AnswerStore({ dir });
    rmSync(join(dir, 'answers'), { recursive: true });
    writeFileSync(join(dir, 'answers'), 'not a directory'); // every write now fails (ENOTDIR)
    expect(s.put('k', answer('{}')).body).toBe('{}');
    expect(s.get('k')?.body).toBe('{}');
  });
});

describe('InFlight', () => {
  it('a retry with the same key shares the running work; another body is a conflict; the work stops when every waiter left', async () => {
    const f = new InFlight<string>();
    let runs = 0;
    let release!: (v: string) => void;
    const work = (signal: AbortSignal): Promise<string> =>
      new Promise((ok, fail) => {
        runs++;
        release = ok;
        signal.addEventListener('abort', () => fail(new Error('aborted')));
      });
    const c1 = new AbortController();
    const c2 = new AbortController();
    const p1 = f.join('k', 'fp', c1.signal, work);
    const p2 = f.join('k', 'fp', c2.signal, work);
    expect(f.join('k', 'other', new AbortController().signal, work)).toBe('conflict');
    c1.abort(); // one waiter left: the work goes on for the other
    release('done');
    await expect(p2).resolves.toBe('done');
    await expect(p1).resolves.toBe('done');
    expect(runs).toBe(1);
    const c3 = new AbortController();
    const p3 = f.join('j', 'fp', c3.signal, work) as Promise<string>;
    c3.abort();
    await expect(p3).rejects.toThrow('aborted');
  });
});

describe('service failures', () => {
  it('ENOSPC / EROFS / ENOMEM are the machine failing, never the request', () => {
    const err = (code: string) => Object.assign(new Error(`${code}: boom`), { code });
    expect(machineFailure(err('ENOSPC'))).toMatchObject({ error: 'service_failure', status: 503, cause: 'disk_full' });
    expect(machineFailure(err('EROFS'))).toMatchObject({ cause: 'disk_unwritable' });
    expect(machineFailure(err('ENOMEM'))).toMatchObject({ cause: 'resources' });
    expect(machineFailure(new Error('plain bug'))).toBeUndefined();
  });

  it('a simulator that hits ENOSPC, or reports its process killed, is a service failure; the next item scores', async () => {
    let mode: 'enospc' | 'killed' | 'ok' = 'enospc';
    const sim: Simulator = {
      name: 'fake',
      info: async () => ({ name: 'fake', version: '1' }),
      simulate: async () => {
        if (mode === 'enospc') throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        const killed = mode === 'killed';
        return {
          status: killed ? 'exception' : 'success',
          err_msg: killed ? 'the simulation process was killed by SIGKILL from outside the run' : '',
          reward: killed ? 0 : 1.5,
          coverage: killed ? null : { waived: { overall: 0.5 } },
          diagnostics: [],
        } as never;
      },
    };
    const svc = new ScoreService({ simulator: sim, workers: 1, queueLimit: 1 });
    // Introspection is skipped: the design is put into the store as if cached.
    (svc.designs as unknown as { acquire: unknown }).acquire = async () => ({
      design: { files: [], libraryFiles: [], includeDirs: [], defines: {}, params: {} },
      top: 't',
      dir: '/nowhere',
      cached: true,
      release: () => {},
    });
    const item = { testbench: { name: 'tb.sv', content: 'x' }, coverage_target: 100, timeout_s: null, seed: null, score: null } as never;
    const signal = new AbortController().signal;
    try {
      expect(await svc.scoreOne(item, signal)).toMatchObject({ ok: false, error: { error: 'service_failure', cause: 'disk_full' } });
      mode = 'killed';
      expect(await svc.scoreOne(item, signal)).toMatchObject({ ok: false, error: { cause: 'worker_killed', status: 503 } });
      mode = 'ok';
      expect(await svc.scoreOne(item, signal)).toMatchObject({ ok: true, record: { status: 'success', coverage: 0.5 } });
    } finally {
      await svc.shutdown(0, 'test over');
    }
  });

  it('descendants lists the processes below the service', async () => {
    const { spawn } = await import('node:child_process');
    const child = spawn('sleep', ['5']);
    await new Promise((r) => child.once('spawn', r));
    expect(descendants().map((p) => p.pid)).toContain(child.pid);
    child.kill('SIGKILL');
  });
});

// ---------------------------------------------------------------------------------------------
// The remote client against fake services on loopback

interface Fake {
  server: Server;
  url: string;
  keys: string[];
  /** What the next /v1/score requests do, in order; then 'ok'. */
  script: Array<'reset' | '503' | 'cut' | 'ok'>;
  ready: boolean;
}

async function fake(): Promise<Fake> {
  const f = { keys: [] as string[], script: [] as Fake['script'], ready: true } as Fake;
  f.server = createServer((req, res) => {
    if (req.url === '/readyz') {
      res.writeHead(f.ready ? 200 : 503).end('{}');
      return;
    }
    req.resume();
    req.on('end', () => {
      f.keys.push(String(req.headers['idempotency-key']));
      const step = f.script.shift() ?? 'ok';
      if (step === 'reset') return req.socket.destroy();
      if (step === '503')
        return res
          .writeHead(503, { 'Content-Type': 'application/json' })
          .end('{"error":"service_failure","cause":"worker_killed","message":"killed"}');
      if (step === 'cut') {
        // Headers and half a body, then the connection drops: the client must retry, not parse.
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '100' });
        res.write('{"status":"succ');
        setTimeout(() => req.socket.destroy(), 10);
        return;
      }
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ status: 'success', reward: 1.5, coverage: 0.5, coverage_breakdown: null, err_msg: '', diagnostics: [] }));
    });
  });
  await new Promise<void>((r) => f.server.listen(0, '127.0.0.1', r));
  f.url = `http://127.0.0.1:${(f.server.address() as AddressInfo).port}`;
  return f;
}

describe('RemoteSimulator retries', () => {
  const servers: Server[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) s.close();
  });
  const request = () => {
    const d = tmp();
    const file = join(d, 'm.sv');
    writeFileSync(file, 'module m; endmodule');
    return {
      design: { files: [file], libraryFiles: [], includeDirs: [], defines: {}, params: {} },
      top: 'm',
      testbench: { name: 'tb.sv', content: 'module tb; m u(); endmodule' },
    } as never;
  };

  it('one service that resets, fails and cuts its answer, then recovers: same key on every try', async () => {
    const a = await fake();
    servers.push(a.server);
    a.script = ['reset', '503', 'cut'];
    const sim = new RemoteSimulator({ urls: [a.url], downS: 0.01, maxBackoffS: 0.05 });
    const r = await sim.simulate(request());
    expect(r.status).toBe('success');
    expect(a.keys).toHaveLength(4);
    expect(new Set(a.keys).size).toBe(1);
    expect(a.keys[0]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('fails over to the next service, and takes the first back once its /readyz answers 200', async () => {
    const a = await fake();
    const b = await fake();
    servers.push(a.server, b.server);
    a.script = ['503'];
    a.ready = false;
    const sim = new RemoteSimulator({ urls: [a.url, b.url], downS: 0.01, maxBackoffS: 0.05 });
    expect((await sim.simulate(request())).status).toBe('success');
    expect(a.keys).toHaveLength(1);
    expect(b.keys).toEqual(a.keys); // the retry on b carries a's key
    // a stays out while not ready
    for (let i = 0; i < 3; i++) await sim.simulate(request());
    expect(a.keys).toHaveLength(1);
    a.ready = true;
    await new Promise((r) => setTimeout(r, 100));
    await sim.simulate(request()); // starts the probe
    await new Promise((r) => setTimeout(r, 100));
    await sim.simulate(request());
    await sim.simulate(request());
    expect(a.keys.length).toBeGreaterThan(1);
  });
});
