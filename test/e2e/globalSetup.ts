// Once per end-to-end run: install code-server (idempotent), package the VSIX of this working tree
// (each test file installs it into its own code-server) and start from an empty screenshot folder.
// CHORUS_E2E_VSIX=<file> tests that VSIX instead of packaging the working tree.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { ensureCodeServer, packageVsix, SHOTS } from './harness.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Path of the packaged VSIX. */
    chorusVsix: string;
  }
}

export default function setup(project: TestProject): () => void {
  rmSync(SHOTS, { recursive: true, force: true });
  ensureCodeServer();
  const given = process.env.CHORUS_E2E_VSIX;
  if (given) {
    if (!existsSync(given)) throw new Error(`CHORUS_E2E_VSIX=${given}: no such file`);
    project.provide('chorusVsix', resolve(given));
    return () => undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), 'chorus-e2e-vsix-'));
  const vsix = join(dir, 'chorus.vsix');
  packageVsix(vsix);
  project.provide('chorusVsix', vsix);
  return () => rmSync(dir, { recursive: true, force: true });
}
