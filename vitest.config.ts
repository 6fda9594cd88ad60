import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The end-to-end suite drives a real VS Code: npm run test:e2e (vitest.e2e.config.ts).
    exclude: ['test/e2e/**', '**/node_modules/**'],
    globalSetup: ['test/globalSetup.ts'],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // Simulations are CPU-bound: two at a time use both cores of the CI machine.
    maxWorkers: 2,
    minWorkers: 1,
    // `chorus generate/refine/sim` write a run folder beside the design by default: in the suites
    // it goes to the temporary folder instead of the repository's examples (the run-folder tests
    // unset it to check the default).
    env: { CHORUS_OUT_DIR: join(tmpdir(), 'chorus-test-runs') },
  },
});
