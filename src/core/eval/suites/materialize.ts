// JSONL suites carry their files inline: they are written under a folder (the output folder's
// `suite/`), one subfolder per task, so the engine and a user see real files.
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join, normalize, resolve, sep } from 'node:path';

/** A file-system-safe folder name for a task id. */
export function safeName(id: string): string {
  return (
    id
      .replace(/[^A-Za-z0-9_.-]+/g, '_')
      .replace(/^\.+/, '_')
      .slice(0, 120) || '_'
  );
}

/** Writes `content` to `root/rel` (rel sanitized to stay inside root); skips identical content. */
export function writeInside(root: string, rel: string, content: string): string {
  const clean =
    normalize(rel.replace(/\\/g, '/'))
      .split('/')
      .filter((p) => p && p !== '..' && p !== '.')
      .join(sep) || 'file';
  const path = resolve(root, clean);
  if (!path.startsWith(resolve(root) + sep)) throw new Error(`file path escapes the task folder: ${rel}`);
  if (existsSync(path) && readFileSync(path, 'utf8') === content) return path;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
  return path;
}

export function taskDir(workDir: string, id: string): string {
  return join(resolve(workDir), safeName(id));
}
