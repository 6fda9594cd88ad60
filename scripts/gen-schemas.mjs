// Writes the JSON documents generated from the zod schemas (src/core/service/schemaFiles.ts):
// media/chorus.schema.json (the editor's chorus.json schema) and docs/reward-service.openapi.json.
// Run after changing a schema: `node scripts/gen-schemas.mjs`; test/unit/schemas.test.ts fails
// while a committed file is stale.
import { build } from 'esbuild';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = await build({
  stdin: { contents: "export { generatedSchemaFiles } from './src/core/service/schemaFiles.ts';", resolveDir: root, loader: 'ts' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  write: false,
  logLevel: 'error',
});
const { generatedSchemaFiles } = await import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`);
for (const [path, doc] of Object.entries(generatedSchemaFiles())) {
  writeFileSync(join(root, path), JSON.stringify(doc, null, 2) + '\n');
  console.log(`wrote ${path}`);
}
