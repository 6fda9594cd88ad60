// Writes every file derived from the engine's definitions (`npm run gen`):
// - the JSON documents of src/core/service/schemaFiles.ts: media/chorus.schema.json (chorus.json's
//   schema), docs/reward-service.openapi.json, training/chorus_train/run_settings.json (the
//   training side's copy of the run settings);
// - package.json's `contributes.configuration` (the editor's settings) and the README's table of
//   run settings, both from src/core/vocabulary/settings.ts.
// test/unit/schemas.test.ts and test/unit/settingsSurfaces.test.ts fail while a committed file is stale.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = await build({
  stdin: {
    contents:
      "export { generatedSchemaFiles } from './src/core/service/schemaFiles.ts';\n" +
      "export { editorConfiguration, readmeSettingsTable, README_TABLE_MARKERS } from './src/core/vocabulary/surfaces.ts';",
    resolveDir: root,
    loader: 'ts',
  },
  bundle: true,
  platform: 'node',
  format: 'esm',
  write: false,
  logLevel: 'error',
});
const gen = await import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`);

const written = [];
for (const [path, doc] of Object.entries(gen.generatedSchemaFiles())) {
  writeFileSync(join(root, path), JSON.stringify(doc, null, 2) + '\n');
  written.push(path);
}

const pkgPath = join(root, 'package.json');
const pkg = JSON.parse(readFileSync(pkgPath, 'utf8'));
pkg.contributes.configuration = gen.editorConfiguration();
writeFileSync(pkgPath, JSON.stringify(pkg, null, 2) + '\n');
written.push('package.json');

const readmePath = join(root, 'README.md');
const readme = readFileSync(readmePath, 'utf8');
const [begin, end] = gen.README_TABLE_MARKERS;
const a = readme.indexOf(begin);
const b = readme.indexOf(end);
if (a < 0 || b < a) throw new Error(`README.md: the markers ${begin} ... ${end} are missing; put them where the table goes`);
writeFileSync(readmePath, readme.slice(0, a + begin.length) + '\n' + gen.readmeSettingsTable() + readme.slice(b));
written.push('README.md');
// The repository's formatter has the last word on layout, so a regenerated file differs only where
// its content does.
execFileSync(join(root, 'node_modules', '.bin', 'prettier'), ['--write', ...written], { cwd: root, stdio: 'ignore' });
for (const p of written) console.log(`wrote ${p}`);
