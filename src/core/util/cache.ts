// Per-machine cache directory for artifacts that are identical across runs (Verilator's runtime
// objects, precompiled headers). Override with CHORUS_CACHE_DIR.
import { homedir } from 'node:os';
import { join } from 'node:path';

export function cacheRoot(): string {
  if (process.env.CHORUS_CACHE_DIR) return process.env.CHORUS_CACHE_DIR;
  const xdg = process.env.XDG_CACHE_HOME;
  return join(xdg && xdg.length ? xdg : join(homedir(), '.cache'), 'chorus');
}
