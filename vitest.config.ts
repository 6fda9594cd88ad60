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
  },
});
