// Builds the CLI bundle once before the suites that run `chorus` as a user would.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const root = join(fileURLToPath(new URL('.', import.meta.url)), '..');
  execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs'), '--cli-only'], { cwd: root, stdio: 'inherit' });
}
