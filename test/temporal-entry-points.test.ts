import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ESLint } from 'eslint';
import { describe, expect, test } from 'vitest';

/**
 * `@activity-core/temporal` has one entry point per kind of process:
 * `/client` (start runs, reconcile, connection, codec, tracing), `/worker`
 * (the worker, the workflow bundle, the activities) and `/workflows` (the
 * sandbox's entry). A process that only starts workflows must not load the
 * worker: `@temporalio/worker` pulls in the native core bridge and the
 * bundler, which the API neither declares nor needs.
 */

const WORKER_MODULE = /[\\/]node_modules[\\/]@temporalio[\\/](worker|core-bridge)[\\/]/;

/**
 * Imports the given modules in a fresh Node process (TypeScript sources via
 * tsx) and answers every CommonJS module it loaded: the Temporal SDK packages
 * are CommonJS, so whatever of them was loaded is in the require cache.
 */
async function modulesLoadedBy(specifiers: string[]): Promise<string[]> {
  const script = [
    "import { createRequire } from 'node:module';",
    ...specifiers.map((specifier) => `await import(${JSON.stringify(specifier)});`),
    'process.stdout.write(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));',
  ].join('\n');
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '--eval', script],
    { cwd: process.cwd(), timeout: 60_000 },
  );
  return JSON.parse(stdout) as string[];
}

describe('what each entry point of @activity-core/temporal loads', () => {
  test('the client entry point loads the Temporal client and no module of @temporalio/worker or @temporalio/core-bridge', async () => {
    const loaded = await modulesLoadedBy(['@activity-core/temporal/client']);
    expect(loaded.some((path) => /[\\/]@temporalio[\\/]client[\\/]/.test(path))).toBe(true);
    expect(loaded.filter((path) => WORKER_MODULE.test(path))).toEqual([]);
  }, 90_000);

  test('the API, the router and the schedule manager, loaded as the API process loads them, load no worker module', async () => {
    const loaded = await modulesLoadedBy([
      './apps/api/src/app.ts',
      '@activity-core/router',
      '@activity-core/schedule-manager',
    ]);
    expect(loaded.some((path) => /[\\/]@temporalio[\\/]client[\\/]/.test(path))).toBe(true);
    expect(loaded.filter((path) => WORKER_MODULE.test(path))).toEqual([]);
  }, 90_000);

  test('the worker entry point does load the Temporal worker (so the check above can see one)', async () => {
    const loaded = await modulesLoadedBy(['@activity-core/temporal/worker']);
    expect(loaded.filter((path) => WORKER_MODULE.test(path))).not.toEqual([]);
  }, 90_000);

  test('there is no bare entry point that could load the worker by accident', async () => {
    await expect(modulesLoadedBy(['@activity-core/temporal'])).rejects.toThrow(
      /ERR_PACKAGE_PATH_NOT_EXPORTED|No "exports" main defined/,
    );
  }, 90_000);
});

const restrictedImports = async (filePath: string, code: string): Promise<string[]> => {
  // The real config, minus type-aware parsing (the file is virtual, so no tsconfig owns it).
  const eslint = new ESLint({
    cwd: process.cwd(),
    overrideConfig: [
      {
        languageOptions: { parserOptions: { projectService: false } },
        rules: { '@typescript-eslint/no-floating-promises': 'off' },
      },
    ],
  });
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
};

describe('lint keeps the worker out of the processes that only start workflows', () => {
  test.each(['apps/api/src/example.ts', 'packages/router/src/example.ts', 'packages/schedule-manager/src/example.ts'])(
    '%s may not import the worker entry point or the Temporal worker',
    async (filePath) => {
      expect(
        await restrictedImports(
          filePath,
          "import { createWorker } from '@activity-core/temporal/worker';\nexport const x = createWorker;\n",
        ),
      ).toHaveLength(1);
      expect(
        await restrictedImports(filePath, "import { Worker } from '@temporalio/worker';\nexport const x = Worker;\n"),
      ).toHaveLength(1);
      expect(
        await restrictedImports(
          filePath,
          "import { createWorker } from '../../../packages/temporal/src/worker';\nexport const x = createWorker;\n",
        ),
      ).toHaveLength(1);
      expect(
        await restrictedImports(
          filePath,
          "import { createRunStarter } from '@activity-core/temporal/client';\nexport const x = createRunStarter;\n",
        ),
      ).toEqual([]);
    },
  );

  test('the worker process may import both', async () => {
    expect(
      await restrictedImports(
        'apps/worker/src/example.ts',
        "import { createWorker } from '@activity-core/temporal/worker';\nimport { createRunStarter } from '@activity-core/temporal/client';\nexport const x = [createWorker, createRunStarter];\n",
      ),
    ).toEqual([]);
  });
});
