// @ts-check
import { builtinModules } from 'node:module';
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettierConfig from 'eslint-config-prettier';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];

export default tseslint.config(
  { ignores: ['**/node_modules/**', '.data/**', '.tools/**', 'packages/*/migrations/**', 'coverage/**', 'dist/**'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.mjs', 'scripts/*.mjs'] },
        tsconfigRootDir: import.meta.dirname,
      },
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // Workflow code is replayed and must be deterministic: no Node built-ins,
    // no I/O libraries, no runtime imports of barrels that pull them in.
    files: ['packages/temporal/src/workflows/**/*.ts'],
    // Tests beside the workflows drive them from outside (client, test server); they are never bundled.
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.map((name) => ({
              name,
              message: 'Workflow code must not import Node modules: use an activity.',
            })),
            {
              name: '@activity-core/contracts',
              allowTypeImports: true,
              message:
                'Import pure subpaths (@activity-core/contracts/ids, /duration) at runtime; the barrel pulls in zod and croner.',
            },
            {
              name: '@activity-core/db',
              allowTypeImports: true,
              message: 'Workflows never touch the database: use an activity.',
            },
            { name: '@temporalio/client', message: 'Workflows cannot use the client: use an activity.' },
            { name: '@temporalio/worker', message: 'Workflows cannot use the worker package.' },
            { name: '@temporalio/activity', message: 'Workflows cannot use the activity context.' },
          ],
          patterns: [
            {
              group: ['../effects', '../effects/*'],
              allowTypeImports: true,
              message: 'Workflows import effect (Temporal activity) types only.',
            },
          ],
        },
      ],
    },
  },
  {
    // Processes and packages that only start workflows never load the worker (its native core
    // bridge, the bundler): they use @activity-core/temporal/client. test/temporal-entry-points.test.ts
    // checks what actually loads.
    files: ['apps/api/**/*.ts', 'packages/router/**/*.ts', 'packages/schedule-manager/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@activity-core/temporal/worker',
              message: 'Only the worker process loads the worker: import @activity-core/temporal/client.',
            },
            {
              name: '@temporalio/worker',
              message:
                'Only the worker process loads the Temporal worker: use @temporalio/client or @activity-core/temporal/client.',
            },
            { name: '@temporalio/core-bridge', message: 'Only the worker process loads the native core bridge.' },
          ],
          patterns: [
            {
              group: ['@temporalio/worker/*', '@temporalio/core-bridge/*', '@activity-core/temporal/worker/*'],
              message: 'Only the worker process loads the worker.',
            },
            { group: ['**/temporal/src/**'], message: 'Import @activity-core/temporal/client, not its sources.' },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.test.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  // Layout is prettier's (npm run format; checked by npm run lint): no stylistic lint rule argues with it.
  prettierConfig,
);
