// bench/serve-load --group G: the reward service's candidates per second when RL sends each
// prompt's G samples as one group request (`testbenches`), beside the same candidates sent one per
// request, in one run, against one service (warmed on each design first). Both forms carry the same
// mix (good, broken, endless candidates; serve-load.ts `request`); a 429 is retried after its
// Retry-After. "Lost" counts candidates never answered or answered with another outcome than their
// kind's. Goal of issue 42: the group form at least 2.5x the single form's candidates per second,
// 0 lost.
import { startScoreServer } from '../src/core/run/service.js';

export type Kind = 'good' | 'broken' | 'timeout';
export interface Candidate {
  kind: Kind;
  /** A single-form `/v1/score` body. */
  body: { testbench: unknown; timeout_s?: number } & Record<string, unknown>;
}
export const EXPECTED: Record<Kind, string> = { good: 'success', broken: 'xrun_failed', timeout: 'timeout' };

/** Waits what a 429's Retry-After says, with jitter (clients told the same must not come back in
 * the same instant). */
export function afterRetryAfter(res: Response): Promise<void> {
  const wait = Number(res.headers.get('retry-after') ?? '1');
  return new Promise((r) => setTimeout(r, (Number.isFinite(wait) ? wait : 1) * 1000 * (0.5 + Math.random())));
}

/** The service both loads run against: in-process, on loopback. */
export function benchServer(o: { workers: number; queueLimit: number }): ReturnType<typeof startScoreServer> {
  return startScoreServer({ port: 0, host: '127.0.0.1', workers: o.workers, queueLimit: o.queueLimit, graceS: 30, maxTimeoutS: 120 });
}

interface FormResult {
  form: string;
  requests: number;
  candidates: number;
  wall: number;
  lost: number;
  retried: number;
}

/** Sends `bodies` from `clients` concurrent clients; each answer's results checked against `kinds`. */
async function load(url: string, clients: number, bodies: Array<{ body: unknown; kinds: Kind[] }>, form: string): Promise<FormResult> {
  let next = 0;
  let lost = 0;
  let retried = 0;
  const t0 = performance.now();
  const client = async (): Promise<void> => {
    for (let i = next++; i < bodies.length; i = next++) {
      const { body, kinds } = bodies[i];
      for (;;) {
        let res: Response;
        let payload: { status?: string; results?: Array<{ status?: string }> };
        try {
          res = await fetch(`${url}/v1/score`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify(body),
          });
          payload = (await res.json()) as typeof payload;
        } catch {
          lost += kinds.length;
          break;
        }
        if (res.status === 429) {
          retried++;
          await afterRetryAfter(res);
          continue;
        }
        const got = payload.results ?? [payload];
        kinds.forEach((k, j) => {
          if (res.status !== 200 || got[j]?.status !== EXPECTED[k]) lost++;
        });
        break;
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, () => client()));
  const candidates = bodies.reduce((a, b) => a + b.kinds.length, 0);
  return { form, requests: bodies.length, candidates, wall: (performance.now() - t0) / 1000, lost, retried };
}

/** The comparison: `count` candidates one per request, then in groups of `group` (one design each). */
export async function compareGroups(
  o: { requests: number; clients: number; workers: number; queueLimit: number; group: number },
  designs: number,
  candidate: (i: number) => Candidate,
): Promise<number> {
  const server = await benchServer(o);
  try {
    // Warm-up: each design read once (the design cache), the runtime built; not timed.
    for (let d = 0; d < designs; d++) await load(server.url, 1, [{ body: candidate(d).body, kinds: [candidate(d).kind] }], 'warm-up');
    const n = Math.ceil(o.requests / (o.group * designs)) * o.group * designs;
    const all = Array.from({ length: n }, (_, i) => candidate(i + designs));
    const single = await load(
      server.url,
      o.clients,
      all.map((c) => ({ body: c.body, kinds: [c.kind] })),
      'single (one candidate per request)',
    );
    // Groups: candidates of one design (request(i) cycles the designs by i), `group` at a time.
    const groups: Array<{ body: unknown; kinds: Kind[] }> = [];
    for (let d = 0; d < designs; d++) {
      const mine = all.filter((_, i) => i % designs === d);
      for (let k = 0; k < mine.length; k += o.group) {
        const members = mine.slice(k, k + o.group);
        const { testbench: _t, timeout_s: _s, ...shared } = members[0].body;
        // One timeout for the group: the endless members' (serve-load gives them 1 s).
        const timeout = Math.min(...members.map((m) => m.body.timeout_s ?? 120));
        groups.push({
          body: { ...shared, ...(timeout < 120 ? { timeout_s: timeout } : {}), testbenches: members.map((m) => m.body.testbench) },
          kinds: members.map((m) => m.kind),
        });
      }
    }
    const grouped = await load(server.url, Math.max(1, Math.ceil(o.clients / o.group)), groups, `groups of ${o.group} (testbenches)`);
    const rows = [single, grouped].map((r) => [
      r.form,
      String(r.requests),
      String(r.candidates),
      r.wall.toFixed(1),
      (r.candidates / r.wall).toFixed(2),
      String(r.retried),
      String(r.lost),
    ]);
    const ratio = grouped.candidates / grouped.wall / (single.candidates / single.wall);
    process.stdout.write(
      `\n| form | requests | candidates | wall s | candidates/s | 429 retried | lost |\n|---|---:|---:|---:|---:|---:|---:|\n` +
        rows.map((r) => `| ${r.join(' | ')} |`).join('\n') +
        `\n\ngroups: ${ratio.toFixed(2)}x the single form's candidates per second (goal >= 2.5x: ${ratio >= 2.5 ? 'PASS' : 'MISS'}); ` +
        `lost ${single.lost + grouped.lost} (goal 0: ${single.lost + grouped.lost === 0 ? 'PASS' : 'FAIL'})\n`,
    );
    return single.lost + grouped.lost === 0 ? 0 : 1;
  } finally {
    await server.close();
  }
}
