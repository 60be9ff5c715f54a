import { defineConfig } from 'vitest/config';

/**
 * Two projects: `unit` (pure logic, no servers, fast) and `integration`
 * (a real Temporal dev server and a real Postgres, started once per run by
 * test/global-setup.ts; every test file gets its own database and task queue).
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          // Unit tests run first; integration files start after them.
          sequence: { groupOrder: 0 },
          include: [
            'packages/*/src/**/*.test.ts',
            'apps/*/src/**/*.test.ts',
            'packages/*/test/**/*.test.ts',
            'test/**/*.test.ts',
          ],
          exclude: ['**/*.int.test.ts', '**/node_modules/**'],
        },
      },
      {
        test: {
          name: 'integration',
          sequence: { groupOrder: 1 },
          include: ['**/*.int.test.ts'],
          exclude: ['**/node_modules/**'],
          globalSetup: ['test/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // Files share two servers on two cores; a few at a time keeps timings sane.
          maxWorkers: 2,
          fileParallelism: true,
        },
      },
    ],
  },
});
