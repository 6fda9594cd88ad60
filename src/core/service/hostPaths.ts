// What a reward-service answer may say about the host: nothing. Run directories, the state
// directory, the cache and the home directory are the host's layout (and STATE/tmp-<pid> names the
// process); a client (a trainer, a policy's feedback) needs none of it. Every answer's text passes
// through one redactor, which writes each known root as a label; `chorus serve --host-details`
// keeps them for an administrator's debugging.
import { homedir, tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { cacheRoot } from '../util/cache.js';

export type Redactor = (text: string) => string;

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A redactor for `roots` (path -> label). The longest root wins; a root matches only as a whole
 * path prefix (followed by `/`, a quote, whitespace or the end), never inside a longer name. A
 * pid-named directory under a root (tmp-123, designs-123-abc) reads `<label>/tmp-<pid>`.
 */
export function hostRedactor(roots: Record<string, string>): Redactor {
  const entries = Object.entries(roots)
    .map(([p, label]) => [resolve(p), label] as const)
    .filter(([p]) => p !== '/')
    .sort((a, b) => b[0].length - a[0].length);
  if (!entries.length) return (t) => t;
  const byPath = new Map(entries);
  const re = new RegExp(`(${entries.map(([p]) => escape(p)).join('|')})(?=[/"'\\s:,)\\]]|$)`, 'g');
  const pid = new RegExp(`(tmp|designs)-${process.pid}\\b`, 'g');
  return (text) => text.replace(re, (m) => `<${byPath.get(m) ?? 'host'}>`).replace(pid, '$1-<pid>');
}

/** The service's roots: the OS temp directory (its run directories), its state directory, the
 * cache, the working directory and the home directory. */
export function serviceRedactor(stateDir?: string): Redactor {
  const roots: Record<string, string> = { [homedir()]: 'home', [process.cwd()]: 'cwd', [cacheRoot()]: 'cache', [tmpdir()]: 'tmp' };
  if (stateDir) roots[stateDir] = 'state';
  return hostRedactor(roots);
}
