// The one esbuild configuration of the project: the CLI and bench bundles (scripts/build.mjs) and
// the extension's bundles (scripts/build-extension.mjs) take their options from here, so the
// externals, the ESM `require` shim and the version stamp cannot drift apart.
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

/** Native and heavy packages stay outside every bundle: onnxruntime-node breaks when bundled
 * (docs/environment.md), node-llama-cpp loads its prebuilt binaries at run time. They are loaded
 * from node_modules (the VSIX ships them under dist/node_modules). */
export const NATIVE_EXTERNALS = ['@huggingface/transformers', 'onnxruntime-node', 'onnxruntime-web', 'node-llama-cpp'];

/** sharp (image support) is never used for text models: an empty stub keeps its native binaries out. */
export const sharpStub = {
  name: 'sharp-stub',
  setup(b) {
    b.onResolve({ filter: /^sharp$/ }, () => ({ path: 'sharp', namespace: 'sharp-stub' }));
    b.onLoad({ filter: /.*/, namespace: 'sharp-stub' }, () => ({ contents: 'module.exports = {};', loader: 'js' }));
  },
};

/** ESM bundles still meet CommonJS `require` inside dependencies: give them one. */
const ESM_REQUIRE = "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";

/**
 * Options for a Node bundle. `format: 'esm'` for the CLI, benches and the extension's worker;
 * `'cjs'` for the extension host entry. `executable` adds the shebang.
 */
export function nodeBundle({ format = 'esm', executable = false, production = false, external = NATIVE_EXTERNALS, ...rest }) {
  const banner = [executable ? '#!/usr/bin/env node' : '', format === 'esm' ? ESM_REQUIRE : ''].filter(Boolean).join('\n');
  return {
    bundle: true,
    platform: 'node',
    target: 'node20',
    format,
    sourcemap: !production,
    minify: production,
    legalComments: 'none',
    logLevel: 'warning',
    define: { __CHORUS_VERSION__: JSON.stringify(pkg.version) },
    ...(banner ? { banner: { js: banner } } : {}),
    external,
    plugins: [sharpStub],
    ...rest,
  };
}

/** Options for the dashboard's browser bundle. */
export function browserBundle({ production = false, ...rest }) {
  return {
    bundle: true,
    platform: 'browser',
    target: 'es2022',
    format: 'esm',
    sourcemap: !production,
    minify: production,
    legalComments: 'none',
    logLevel: 'warning',
    ...rest,
  };
}
