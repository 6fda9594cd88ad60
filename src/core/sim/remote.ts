// A simulator that sends each candidate to one of several reward services (`chorus serve`,
// docs/reward-service.md) instead of running it on this machine: `chorus eval --scorer URL[,URL...]`
// fans an evaluation out over every machine that runs the service. Each simulation goes to the
// service with the fewest simulations in flight from this client (ties: round robin); a 429 (queue
// full) waits for its Retry-After and tries again; a service that cannot be reached or answers 503
// (draining, or a service failure such as a killed simulation or a full disk) is taken out of the
// rotation until its /readyz answers 200 again, and the simulation goes to the next service after
// a backoff with jitter (so many clients do not retry in lockstep). Every try of one simulation
// carries the same Idempotency-Key: a service that already answered it replays that answer instead
// of running the candidate twice. The service's score record is turned back into the engine's
// result record, so the evaluator cannot tell a remote run from a local one.
import { DEFAULT_SCORE } from '../vocabulary/defaults.js';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import type { DesignSpec } from '../design/types.js';
import type { SimResult } from './result.js';
import type { Simulator, SimulatorInfo, SimRequest } from './simulator.js';
import { safeDeep, safeLine, safeText } from '../util/untrusted.js';
import { safeResult } from './result.js';

/** Header-like files of an include directory that travel as the request's include_files. */
const INCLUDE_EXT = /\.(vh|svh|h|inc|v|sv|pkg)$/i;

export interface RemoteSimulatorOptions {
  urls: string[];
  /** Attempts per simulation across services (429 waits, unreachable services). Default 20. */
  attempts?: number;
  /** Seconds before a service that failed is first probed again (doubling per failed probe, up to
   * 30 s). Default 1. */
  downS?: number;
  /** Largest backoff between tries of one simulation, seconds (default 10); the wait is drawn
   * uniformly below 0.25 s * 2^try capped at this (full jitter). */
  maxBackoffS?: number;
  fetchImpl?: typeof fetch;
  /** Makes the Idempotency-Key of a simulation (tests); default a random UUID. */
  newKey?: () => string;
}

/** `--scorer a,b` -> normalized URLs; throws naming the bad entry. */
export function scorerUrls(list: string): string[] {
  const urls = list
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
  if (!urls.length) throw new Error('--scorer needs at least one URL (e.g. http://10.0.0.5:8080)');
  for (const u of urls) {
    let p: URL;
    try {
      p = new URL(u);
    } catch {
      throw new Error(`--scorer: '${u}' is not a URL (e.g. http://10.0.0.5:8080)`);
    }
    if (p.protocol !== 'http:' && p.protocol !== 'https:') throw new Error(`--scorer: '${u}' must be an http(s) URL`);
  }
  return urls.map((u) => u.replace(/\/+$/, ''));
}

interface Endpoint {
  url: string;
  inFlight: number;
  /** Out of rotation: failed, and no health probe has succeeded since. */
  down: boolean;
  /** When the next health probe may go. */
  probeAt: number;
  /** Failed probes in a row (the probe interval doubles). */
  probes: number;
  probing: boolean;
  workers: number;
  sent: number;
}

export class RemoteSimulator implements Simulator {
  readonly name = 'remote';
  readonly endpoints: Endpoint[];
  private rr = 0;
  private infoCache: Promise<SimulatorInfo> | null = null;
  private readonly fetch: typeof fetch;
  private readonly attempts: number;
  private readonly downMs: number;
  private readonly maxBackoffMs: number;
  private readonly newKey: () => string;

  constructor(o: RemoteSimulatorOptions) {
    if (!o.urls.length) throw new Error('RemoteSimulator: no reward service URL');
    this.endpoints = o.urls.map((url) => ({ url, inFlight: 0, down: false, probeAt: 0, probes: 0, probing: false, workers: 1, sent: 0 }));
    this.fetch = o.fetchImpl ?? fetch;
    this.attempts = o.attempts ?? 20;
    this.downMs = (o.downS ?? 1) * 1000;
    this.maxBackoffMs = (o.maxBackoffS ?? 10) * 1000;
    this.newKey = o.newKey ?? randomUUID;
  }

  /** Takes a failed service out of the rotation; health probes bring it back. */
  private markDown(e: Endpoint): void {
    if (!e.down) {
      e.down = true;
      e.probes = 0;
    }
    e.probeAt = Date.now() + this.downMs;
  }

  /** Probes the down services whose time has come: /readyz 200 (or /v1/health 200 from a service
   * that predates /readyz) puts one back. Probes run in the background; the caller waits for none. */
  private probe(): void {
    const now = Date.now();
    for (const e of this.endpoints) {
      if (!e.down || e.probing || e.probeAt > now) continue;
      e.probing = true;
      void (async () => {
        let ok = false;
        try {
          let r = await this.fetch(`${e.url}/readyz`, { signal: AbortSignal.timeout(5000) });
          if (r.status === 404) r = await this.fetch(`${e.url}/v1/health`, { signal: AbortSignal.timeout(5000) });
          ok = r.ok;
          await r.body?.cancel();
        } catch {
          ok = false;
        }
        e.probing = false;
        if (ok) e.down = false;
        else {
          e.probes++;
          e.probeAt = Date.now() + Math.min(30_000, this.downMs * 2 ** e.probes);
        }
      })();
    }
  }

  /** Simulations the services run at once, together (their `workers`): the evaluator's default. */
  get capacity(): number {
    return this.endpoints.reduce((n, e) => n + e.workers, 0);
  }

  /** Every service must answer its health check and run the same simulator and version (the
   * report and the result cache name one simulator). */
  info(): Promise<SimulatorInfo> {
    this.infoCache ??= (async () => {
      const seen: Array<{ url: string; sim: SimulatorInfo }> = [];
      for (const e of this.endpoints) {
        let h: { status?: string; simulator?: SimulatorInfo; workers?: number };
        try {
          const r = await this.fetch(`${e.url}/v1/health`);
          h = (await r.json()) as typeof h;
        } catch (err) {
          throw new Error(
            `reward service ${e.url} did not answer /v1/health (${(err as Error).message}); start it with \`chorus serve --port N\` on that machine`,
          );
        }
        if (h.status !== 'ok' || !h.simulator)
          throw new Error(`reward service ${e.url} is not ready (status ${safeLine(String(h.status ?? 'unknown'))})`);
        e.workers = Math.max(1, h.workers ?? 1);
        seen.push({ url: e.url, sim: safeDeep(h.simulator) });
      }
      const first = seen[0].sim;
      const other = seen.find((s) => s.sim.name !== first.name || s.sim.version !== first.version);
      if (other)
        throw new Error(
          `reward services run different simulators: ${seen[0].url} ${first.name} ${first.version}, ${other.url} ${other.sim.name} ${other.sim.version}; use one version everywhere`,
        );
      return { name: first.name, version: first.version };
    })();
    return this.infoCache;
  }

  private pick(): Endpoint {
    this.probe();
    const up = this.endpoints.filter((e) => !e.down);
    const pool = up.length ? up : this.endpoints;
    const least = Math.min(...pool.map((e) => e.inFlight));
    const n = this.endpoints.length;
    for (let k = 0; k < n; k++) {
      const e = this.endpoints[(this.rr + k) % n];
      if (pool.includes(e) && e.inFlight === least) {
        this.rr = (this.endpoints.indexOf(e) + 1) % n;
        return e;
      }
    }
    return pool[0];
  }

  async simulate(req: SimRequest): Promise<SimResult> {
    const body = JSON.stringify(scoreItem(req));
    // One key for every try of this simulation: a service that answered it already replays it.
    const key = this.newKey();
    let last = '';
    let failures = 0;
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      req.signal?.throwIfAborted();
      const e = this.pick();
      e.inFlight++;
      e.sent++;
      try {
        const r = await this.fetch(`${e.url}/v1/score`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key },
          body,
          signal: req.signal,
        });
        const payload = (await r.json()) as Record<string, unknown>;
        if (r.ok) {
          e.down = false;
          return fromRecord(payload);
        }
        // Another machine's words: shown as text, never as terminal control sequences.
        const msg = safeText(typeof payload.message === 'string' ? payload.message : JSON.stringify(payload));
        if (r.status === 429) {
          const wait = Number(r.headers.get('Retry-After') ?? payload.retry_after_s ?? 1);
          last = `${e.url}: queue full`;
          // Jitter: clients told the same Retry-After must not come back in the same instant.
          await sleep(Math.min(Math.max(wait, 0.05), 30) * 1000 * (0.5 + Math.random()), req.signal);
          continue;
        }
        if (r.status === 503 || r.status === 502 || r.status === 504) {
          // Draining, a service failure (killed simulation, full disk) or a proxy without an
          // upstream: not the candidate's fault; the next service gets it.
          this.markDown(e);
          failures++;
          last = `${e.url}: HTTP ${r.status}${typeof payload.cause === 'string' ? ` (${safeLine(payload.cause)})` : ''}: ${msg}`;
          // Every service is down: wait (backoff with jitter) before trying one anyway.
          if (this.endpoints.every((x) => x.down)) await sleep(this.backoffMs(failures), req.signal);
          continue;
        }
        // 400 (the request), 422 (the design), 500: the same at any service
        throw new Error(`reward service ${e.url}: HTTP ${r.status}: ${msg}`);
      } catch (err) {
        if (req.signal?.aborted || (err as Error).message.startsWith('reward service ')) throw err;
        // Unreachable, reset mid-answer, or an answer that is not JSON (cut off): try again.
        this.markDown(e);
        failures++;
        last = `${e.url}: ${(err as Error).message}`;
        if (this.endpoints.every((x) => x.down)) await sleep(this.backoffMs(failures), req.signal);
      } finally {
        e.inFlight--;
      }
    }
    throw new Error(`no reward service scored the candidate after ${this.attempts} attempts (last: ${last})`);
  }

  /** Full jitter: uniform below 0.25 s * 2^failures, capped. */
  private backoffMs(failures: number): number {
    return Math.random() * Math.min(this.maxBackoffMs, 250 * 2 ** Math.min(failures, 16));
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((ok, fail) => {
    const t = setTimeout(ok, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), fail(signal.reason)), { once: true });
  });
}

/** The `/v1/score` item for a request: design files named relative to their common folder, the
 * header-like files of the include folders as include_files, defines, params, timeout and seed. */
export function scoreItem(req: SimRequest): Record<string, unknown> {
  const d: DesignSpec = req.design;
  if (d.libraryFiles.length)
    throw new Error('the reward service takes design files only: a design with -v library files cannot be scored with --scorer');
  const includes = d.includeDirs.flatMap((dir) =>
    readdirSync(dir)
      .map((f) => join(dir, f))
      .filter((p) => INCLUDE_EXT.test(p) && !d.files.includes(p) && statSync(p).isFile()),
  );
  const all = [...d.files, ...includes];
  const root = commonDir(all);
  const name = (p: string): string => relative(root, p).split(sep).join('/');
  return {
    design_files: d.files.map((p) => ({ name: name(p), content: readFileSync(p, 'utf8') })),
    ...(includes.length ? { include_files: [...new Set(includes)].map((p) => ({ name: name(p), content: readFileSync(p, 'utf8') })) } : {}),
    top: req.top,
    testbench: { name: req.testbench.name, content: req.testbench.content },
    ...(Object.keys(d.defines).length ? { defines: d.defines } : {}),
    ...(Object.keys(d.params).length ? { params: d.params } : {}),
    ...(req.limits?.timeoutS !== undefined ? { timeout_s: req.limits.timeoutS } : {}),
    ...(req.seed !== undefined ? { seed: req.seed } : {}),
    ...(req.score && req.score !== DEFAULT_SCORE ? { score: req.score } : {}),
  };
}

function commonDir(paths: string[]): string {
  if (!paths.every(isAbsolute)) throw new Error('RemoteSimulator: design paths must be absolute');
  let root = dirname(paths[0]);
  while (!paths.every((p) => p.startsWith(root.endsWith(sep) ? root : root + sep))) {
    const up = dirname(root);
    if (up === root) break;
    root = up;
  }
  return root;
}

/** The service's score record -> the engine's result record (`coverage` is the breakdown again).
 * Another machine answered it: every text field is made safe to show, as a local backend's are. */
function fromRecord(rec: Record<string, unknown>): SimResult {
  const { coverage: _c, passed: _p, coverage_target: _t, coverage_breakdown, design_cached: _d, ...rest } = rec;
  return safeResult({ ...rest, coverage: coverage_breakdown ?? null } as unknown as SimResult);
}
