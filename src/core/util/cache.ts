// Per-machine cache directory for artifacts that are identical across runs (Verilator's runtime
// objects, precompiled headers). Override with CHORUS_CACHE_DIR.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

export function cacheRoot(): string {
  if (process.env.CHORUS_CACHE_DIR) return process.env.CHORUS_CACHE_DIR;
  const xdg = process.env.XDG_CACHE_HOME;
  return join(xdg && xdg.length ? xdg : join(homedir(), '.cache'), 'chorus');
}

/** A cached JSON entry, or undefined when there is none (or a torn one). */
export function readCacheEntry<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** Writes a JSON entry whole (a reader never sees half of one); a read-only cache only costs the
 * work again next time. */
export function writeCacheEntry(file: string, value: unknown): void {
  try {
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(value));
    renameSync(tmp, file);
  } catch {
    // nothing cached: the next run does the work again
  }
}

/** A file's content hash (sha256, hex) for cache keys; null when it cannot be read. */
export function contentHash(file: string): string | null {
  try {
    return createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch {
    return null;
  }
}
