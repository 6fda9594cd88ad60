// Idempotent score requests: a trainer that loses an answer (timeout, connection reset, the
// service killed and restarted) retries with the same `Idempotency-Key` and must get the answer the
// first try produced, never a second, different one. Final answers (200, 422) are kept in a
// bounded in-memory LRU (bytes and age) and, with a state directory, on disk, written before the
// answer is sent, so any answer a client could have seen survives a crash of the service. A disk
// record is created with link(2), which fails when one exists: two instances sharing a state
// directory still record one answer per key (the loser answers with the winner's). Transient
// answers (429, 503, 5xx) are never kept: a retry of those runs the work again.
import { createHash } from 'node:crypto';
import { linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** What a client may send as Idempotency-Key: 1..200 visible ASCII characters (a UUID fits). */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/;

export interface StoredAnswer {
  status: number;
  /** The JSON text sent. */
  body: string;
  /** sha256 of the request body: a key reused for a different request is refused, not replayed. */
  fingerprint: string;
  /** ms since the epoch, when it was recorded. */
  at: number;
}

export interface AnswerStoreOptions {
  /** Bytes of answers kept in memory (default 64 MiB): bounds the service's RSS. */
  maxBytes?: number;
  /** How long an answer is replayed, seconds (default 6 h: longer than any sane retry loop). */
  ttlS?: number;
  /** Where answers are also written (one file per key); absent: memory only. */
  dir?: string;
  /** Most answers kept on disk (default 200,000); older ones are removed first. */
  maxDiskEntries?: number;
  log?: (line: string) => void;
}

export const fingerprintOf = (body: Buffer | string): string => createHash('sha256').update(body).digest('hex');
const fileOf = (key: string): string => createHash('sha256').update(key).digest('hex') + '.json';

export class AnswerStore {
  private readonly mem = new Map<string, StoredAnswer>();
  private bytes = 0;
  readonly maxBytes: number;
  readonly ttlMs: number;
  readonly dir?: string;
  private readonly maxDiskEntries: number;
  private writesSincePrune = 0;
  private pruning?: Promise<void>;
  private readonly log: (line: string) => void;
  /** Answers replayed (memory or disk) since start. */
  replays = 0;

  constructor(o: AnswerStoreOptions = {}) {
    this.maxBytes = o.maxBytes ?? 64 * 1024 * 1024;
    this.ttlMs = (o.ttlS ?? 6 * 3600) * 1000;
    this.maxDiskEntries = o.maxDiskEntries ?? 200_000;
    this.log = o.log ?? (() => {});
    if (o.dir) {
      this.dir = join(o.dir, 'answers');
      mkdirSync(this.dir, { recursive: true });
      this.prune();
    }
  }

  get size(): number {
    return this.mem.size;
  }
  get memoryBytes(): number {
    return this.bytes;
  }

  /** The recorded answer for `key`, if any and not expired (memory first, then disk). */
  get(key: string): StoredAnswer | undefined {
    const now = Date.now();
    const m = this.mem.get(key);
    if (m) {
      if (now - m.at <= this.ttlMs) {
        // LRU: most recently used last.
        this.mem.delete(key);
        this.mem.set(key, m);
        return m;
      }
      this.forget(key);
    }
    if (!this.dir) return undefined;
    let rec: StoredAnswer & { key?: string };
    try {
      rec = JSON.parse(readFileSync(join(this.dir, fileOf(key)), 'utf8')) as StoredAnswer & { key?: string };
    } catch {
      return undefined; // none, or a torn file from a crash mid-write (never linked: see put)
    }
    if (rec.key !== key || now - rec.at > this.ttlMs) return undefined;
    const a: StoredAnswer = { status: rec.status, body: rec.body, fingerprint: rec.fingerprint, at: rec.at };
    this.remember(key, a);
    return a;
  }

  /**
   * Records the answer for `key` and returns the one to send: `a`, or the answer already recorded
   * on disk by another instance sharing the directory (first recorded wins, so one key never has
   * two different answers).
   */
  put(key: string, a: StoredAnswer): StoredAnswer {
    if (this.dir) {
      const final = join(this.dir, fileOf(key));
      const tmp = `${final}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
      try {
        writeFileSync(tmp, JSON.stringify({ key, ...a }));
        try {
          linkSync(tmp, final);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
          const other = this.get(key);
          if (other) return other;
        }
      } catch (e) {
        // A full or read-only state disk must not lose the answer: memory still replays it.
        this.log(`chorus serve: could not record the answer for an idempotency key on disk: ${(e as Error).message}`);
      } finally {
        try {
          rmSync(tmp, { force: true });
        } catch {
          /* the directory itself is gone or unwritable: nothing was left there */
        }
      }
      // Every 1000 writes, off the request path: a full directory is 200,000 stats.
      if (++this.writesSincePrune >= 1000) void this.pruneInBackground();
    }
    this.remember(key, a);
    return a;
  }

  private remember(key: string, a: StoredAnswer): void {
    this.forget(key);
    const size = a.body.length + key.length + 128;
    if (size > this.maxBytes) return;
    this.mem.set(key, a);
    this.bytes += size;
    for (const [k] of this.mem) {
      if (this.bytes <= this.maxBytes) break;
      this.forget(k);
    }
  }

  private forget(key: string): void {
    const m = this.mem.get(key);
    if (!m) return;
    this.mem.delete(key);
    this.bytes -= m.body.length + key.length + 128;
  }

  /** Removes expired disk records and the oldest beyond maxDiskEntries (bounds the state dir).
   * Synchronous: at startup, before the first request. */
  prune(): void {
    this.writesSincePrune = 0;
    if (!this.dir) return;
    let files: DiskRecord[];
    try {
      files = readdirSync(this.dir).flatMap((f) => {
        const p = join(this.dir!, f);
        try {
          return [{ p, t: statSync(p).mtimeMs }];
        } catch {
          return [];
        }
      });
    } catch {
      return;
    }
    for (const p of this.victims(files)) rmSync(p, { force: true });
  }

  /** prune() without blocking the event loop; one at a time (a second call joins the first). */
  pruneInBackground(): Promise<void> {
    this.writesSincePrune = 0;
    if (!this.dir) return Promise.resolve();
    this.pruning ??= (async () => {
      const dir = this.dir!;
      const files: DiskRecord[] = [];
      for (const f of await readdir(dir).catch(() => [] as string[])) {
        const p = join(dir, f);
        const st = await stat(p).catch(() => undefined);
        if (st) files.push({ p, t: st.mtimeMs });
      }
      for (const p of this.victims(files)) await rm(p, { force: true }).catch(() => {});
    })()
      .catch((e) => this.log(`chorus serve: pruning the answer store failed: ${(e as Error).message}`))
      .finally(() => (this.pruning = undefined));
    return this.pruning;
  }

  /** The records to remove: expired, the oldest beyond maxDiskEntries, old crashed temporaries. */
  private victims(files: DiskRecord[]): string[] {
    const now = Date.now();
    files.sort((a, b) => a.t - b.t);
    const excess = files.length - this.maxDiskEntries;
    // Leftover temporaries of a crashed write are never linked: safe to remove once old.
    return files.filter((f, i) => i < excess || now - f.t > this.ttlMs || (f.p.endsWith('.tmp') && now - f.t > 60_000)).map((f) => f.p);
  }
}

interface DiskRecord {
  p: string;
  /** mtime, ms */
  t: number;
}

/**
 * Requests with the same key that arrive while the first is still running share its answer
 * instead of running twice. The work is aborted only when every waiter has gone.
 */
export class InFlight<T> {
  private readonly running = new Map<string, { fingerprint: string; promise: Promise<T>; waiters: number; controller: AbortController }>();

  get size(): number {
    return this.running.size;
  }

  /** Joins the running request for `key`, or starts `work`. 'conflict' when the key runs for another body. */
  join(key: string, fingerprint: string, clientGone: AbortSignal, work: (signal: AbortSignal) => Promise<T>): Promise<T> | 'conflict' {
    let r = this.running.get(key);
    if (r && r.fingerprint !== fingerprint) return 'conflict';
    // Every earlier waiter left and the work is being aborted: this retry runs it afresh.
    if (r?.controller.signal.aborted) r = undefined;
    if (!r) {
      const controller = new AbortController();
      const entry = { fingerprint, waiters: 0, controller, promise: undefined as unknown as Promise<T> };
      entry.promise = work(controller.signal).finally(() => {
        if (this.running.get(key) === entry) this.running.delete(key);
      });
      this.running.set(key, entry);
      r = entry;
    }
    const entry = r;
    entry.waiters++;
    const leave = (): void => {
      if (--entry.waiters === 0 && !entry.controller.signal.aborted)
        entry.controller.abort(clientGone.reason ?? 'the client closed the connection');
    };
    if (clientGone.aborted) leave();
    else clientGone.addEventListener('abort', leave, { once: true });
    return entry.promise.finally(() => clientGone.removeEventListener('abort', leave));
  }
}
