// What a native package needs at run time, read from node_modules as npm laid it out: the package
// and its dependencies' closure (dependencies plus the optional ones installed for this platform),
// resolved the way Node resolves them (nearest node_modules first). build-extension.mjs copies this
// into the VSIX's dist/node_modules, where the worker bundle imports the native packages from.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** The folder Node would load `name` from when imported from `fromDir`; null when not installed. */
function findPackage(name, fromDir) {
  for (let d = fromDir; ; d = dirname(d)) {
    const p = join(d, 'node_modules', name);
    if (existsSync(join(p, 'package.json'))) return p;
    if (dirname(d) === d) return null;
  }
}

/** npm's `os`/`cpu` rule: absent, listed, or only negations that do not name it. */
const fits = (list, value) =>
  !Array.isArray(list) || list.includes(value) || (list.every((v) => v.startsWith('!')) && !list.includes(`!${value}`));

/**
 * The package folders (relative to `root`'s node_modules) that `name` needs at run time on
 * `platform`/`arch`. Optional dependencies for other platforms (package.json `os`/`cpu`) are left
 * out, and so is every optional dependency `skipOptional(name)` rejects (e.g. GPU builds).
 * @param {string} root the project folder holding node_modules
 * @param {string} name the package
 * @param {{ platform?: string, arch?: string, skipOptional?: (dep: string) => boolean }} [o]
 * @returns {string[]} e.g. ['node-llama-cpp', 'chalk', 'cliui/node_modules/string-width', ...]
 */
export function runtimeClosure(root, name, o = {}) {
  const platform = o.platform ?? process.platform;
  const arch = o.arch ?? process.arch;
  const nm = resolve(root, 'node_modules');
  const start = findPackage(name, resolve(root));
  if (!start) throw new Error(`${name} is not installed in ${nm}; run npm ci.`);
  const seen = new Set();
  const walk = (dir) => {
    if (seen.has(dir)) return;
    seen.add(dir);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    for (const dep of Object.keys(pkg.dependencies ?? {})) {
      const p = findPackage(dep, dir);
      if (!p) throw new Error(`${dep} (needed by ${pkg.name}) is not installed in ${nm}; run npm ci.`);
      walk(p);
    }
    for (const dep of Object.keys(pkg.optionalDependencies ?? {})) {
      if (o.skipOptional?.(dep)) continue;
      const p = findPackage(dep, dir);
      if (!p) continue; // not installed: npm skipped it for this platform
      const meta = JSON.parse(readFileSync(join(p, 'package.json'), 'utf8'));
      if (fits(meta.os, platform) && fits(meta.cpu, arch)) walk(p);
    }
  };
  walk(start);
  return [...seen].map((d) => relative(nm, d).split(sep).join('/'));
}

/** The top-level folders of a closure: copying these copies the nested node_modules with them. */
export const topLevel = (closure) => closure.filter((p) => !p.includes('/node_modules/'));
