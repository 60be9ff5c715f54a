import { defineConfig } from 'vitest/config';
// With its extension: Vite may load this file with Node's own loader, which resolves no extensionless path.
import TestSequencer from './test/sequencer.ts';

/**
 * Integration files that spend most of their time waiting on modelled
 * wall-clock time (outage windows, cron periods, misfire grace) rather than
 * on the CPU. They run in a lane pool of their own beside the CPU-bound
 * files: holding one of the CPU lanes while idle is what set the length of
 * the run. A file belongs here when removing its fixed waits would leave
 * little; it still uses the same real Temporal dev server and Postgres.
 */
export const WALL_CLOCK_FILES = [
  'test/batching-faults.int.test.ts',
  'test/coalescing-faults.int.test.ts',
  'test/coalescing-postgres.int.test.ts',
  'test/cron-overlap.int.test.ts',
  'test/cron-overlap-crash.int.test.ts',
  'test/dead-letters-crash.int.test.ts',
  'test/fault-postgres.int.test.ts',
  'test/fault-temporal.int.test.ts',
  'test/ingress-postgres-outage.int.test.ts',
  'test/ingress-temporal-outage.int.test.ts',
  'test/pacing-faults.int.test.ts',
  'test/schedule-misfire.int.test.ts',
  'test/schedule-pause.int.test.ts',
  'test/schedule-temporal-outage.int.test.ts',
];

const integration = {
  globalSetup: ['test/global-setup.ts'],
  testTimeout: 120_000,
  hookTimeout: 120_000,
  fileParallelism: true,
};

/**
 * Three projects: `unit` (pure logic, no servers, fast), `integration` and
 * `integration-wall-clock` (a real Temporal dev server and a real Postgres,
 * started once per vitest process by test/global-setup.ts; every test file
 * gets its own database and task queue). Files start longest first by
 * recorded duration (test/sequencer.ts).
 */
export default defineConfig({
  test: {
    sequence: { sequencer: TestSequencer },
    projects: [
      {
        test: {
          name: 'unit',
          // Unit tests run first; integration files start after them.
          sequence: { groupOrder: 0 },
          // One module graph per worker process (ADR 0069); the files that fake timers restore them.
          isolate: false,
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
          exclude: ['**/node_modules/**', ...WALL_CLOCK_FILES],
          ...integration,
          // CPU-bound files on two cores: two at a time keeps timings sane.
          maxWorkers: 2,
          // One module graph per worker process, not per file (ADR 0069): the API, worker, Temporal client,
          // fastify and zod modules are evaluated once per lane instead of once per file. Files still get
          // their own database and task queue (test/harness.ts); no file mocks modules or stubs globals.
          isolate: false,
        },
      },
      {
        test: {
          name: 'integration-wall-clock',
          // Vitest runs one pool per group, so in one vitest process this group
          // follows `integration`; `npm test` runs it as a second vitest process
          // at the same time as the other two (scripts/bootstrap.mjs).
          sequence: { groupOrder: 2 },
          include: WALL_CLOCK_FILES,
          exclude: ['**/node_modules/**'],
          ...integration,
          // Idle most of the time; these lanes cost little CPU.
          maxWorkers: 2,
        },
      },
    ],
  },
});
