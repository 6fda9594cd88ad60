// End-to-end tests of the VS Code extension in a real VS Code (code-server) driven by Chromium.
// Run: npm run test:e2e  (installs code-server into .chorus-cache/e2e on first use).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    env: { CHORUS_E2E: '1' },
    // Installs code-server and packages the VSIX once for every test file.
    globalSetup: ['test/e2e/globalSetup.ts'],
    testTimeout: 600_000,
    hookTimeout: 900_000,
    maxWorkers: 1,
    minWorkers: 1,
    fileParallelism: false,
  },
});
