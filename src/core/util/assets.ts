// Files shipped beside the code (the C++ simulation main): next to this module when running from
// source, next to the bundle when running from dist/ (scripts/build.mjs copies them there).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function hereDirs(): string[] {
  const dirs: string[] = [];
  try {
    dirs.push(dirname(fileURLToPath(import.meta.url)));
  } catch {
    /* CommonJS bundle: import.meta.url is empty */
  }
  if (typeof __dirname === 'string') dirs.push(__dirname);
  return dirs;
}

export function assetPath(name: string, sourceSubdir: string): string {
  const candidates: string[] = [];
  for (const d of hereDirs()) {
    candidates.push(join(d, name), join(d, '..', sourceSubdir, name), join(d, '..', '..', sourceSubdir, name));
  }
  candidates.push(join(process.cwd(), 'dist', name), join(process.cwd(), 'src', 'core', sourceSubdir, name));
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw new Error(`internal file ${name} not found (looked in ${candidates.join(', ')}); reinstall the package`);
  return found;
}
