// Designs on disk for the reward service: one content-addressed directory per design (the
// client's files written once), its introspection cached, evicted least-recently-used when idle.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { introspect } from '../sim/verilator/introspect.js';
import { DesignError } from '../design/errors.js';
import type { DesignSpec } from '../design/types.js';
import type { NamedText } from '../agent/protocol.js';
import type { ScoreItem } from './requests.js';

interface DesignEntry {
  key: string;
  dir: string;
  ready: Promise<{ design: DesignSpec; top: string }>;
  refs: number;
  lastUsed: number;
}

export class DesignStore {
  private readonly entries = new Map<string, DesignEntry>();
  readonly root: string;
  private readonly controller = new AbortController();
  hits = 0;
  misses = 0;

  constructor(
    private readonly maxEntries = 128,
    root?: string,
  ) {
    this.root = root ?? mkdtempSync(join(tmpdir(), 'chorus-serve-'));
  }

  get size(): number {
    return this.entries.size;
  }

  static keyOf(item: ScoreItem): string {
    return createHash('sha256')
      .update(JSON.stringify([item.design_files, item.include_files, item.top, item.defines, item.params]))
      .digest('hex')
      .slice(0, 32);
  }

  /** The design's directory and checked spec; call release() when the run is over. */
  async acquire(
    item: ScoreItem,
    signal: AbortSignal,
  ): Promise<{ design: DesignSpec; top: string; dir: string; cached: boolean; release: () => void }> {
    const key = DesignStore.keyOf(item);
    let e = this.entries.get(key);
    const cached = e !== undefined;
    if (e) this.hits++;
    else {
      this.misses++;
      const dir = join(this.root, key);
      e = { key, dir, refs: 0, lastUsed: Date.now(), ready: this.prepare(item, dir) };
      this.entries.set(key, e);
      const entry = e;
      // A cancelled or crashed introspection is not a fact about the design: forget it.
      e.ready.catch((err: unknown) => {
        if (!(err instanceof DesignError) || err.kind === 'tool') this.drop(entry, true);
      });
    }
    const entry = e;
    entry.refs++;
    entry.lastUsed = Date.now();
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      entry.refs--;
      entry.lastUsed = Date.now();
      this.evict();
    };
    try {
      const got = await abortable(entry.ready, signal);
      return { ...got, dir: entry.dir, cached, release };
    } catch (err) {
      release();
      throw err;
    }
  }

  private async prepare(item: ScoreItem, dir: string): Promise<{ design: DesignSpec; top: string }> {
    const tmp = mkdtempSync(join(this.root, '.tmp-'));
    try {
      writeFiles(tmp, [...item.design_files, ...item.include_files]);
      rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true });
      throw err;
    }
    const info = await introspect(designIn(dir, item, item.top), { signal: this.controller.signal, timeoutS: 120 });
    return { design: info.design, top: info.top };
  }

  private drop(e: DesignEntry, force: boolean): void {
    if (this.entries.get(e.key) !== e) return;
    if (!force && e.refs > 0) return;
    this.entries.delete(e.key);
    if (e.refs === 0) rmSync(e.dir, { recursive: true, force: true });
  }

  private evict(): void {
    if (this.entries.size <= this.maxEntries) return;
    const idle = [...this.entries.values()].filter((e) => e.refs === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const e of idle) {
      if (this.entries.size <= this.maxEntries) break;
      this.drop(e, false);
    }
  }

  /** Cancels introspections in progress and removes every design directory. */
  close(): void {
    this.controller.abort();
    this.entries.clear();
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** The client's files under `dir` (names already checked by requests.ts). */
export function writeFiles(dir: string, files: NamedText[]): void {
  for (const f of files) {
    const p = join(dir, f.name);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, f.content);
  }
}

/** The design a request describes, once its files are under `dir` (includes resolve there too). */
export function designIn(dir: string, item: Pick<ScoreItem, 'design_files' | 'defines' | 'params'>, top: string | undefined): DesignSpec {
  return {
    files: item.design_files.map((f) => join(dir, f.name)),
    libraryFiles: [],
    includeDirs: [dir],
    defines: item.defines,
    params: item.params,
    top,
  };
}

/** Every mention of `dir/` in a JSON-able value removed: paths become the client's file names. */
export function relativize<T>(value: T, dir: string): T {
  const needle = JSON.stringify(dir + '/').slice(1, -1);
  return JSON.parse(JSON.stringify(value).replaceAll(needle, '')) as T;
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
