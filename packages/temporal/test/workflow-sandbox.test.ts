import { ESLint } from 'eslint';
import { describe, expect, test } from 'vitest';

const lint = async (code: string): Promise<string[]> => {
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
  const [result] = await eslint.lintText(code, { filePath: 'packages/temporal/src/workflows/example.ts' });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
};

describe('the workflow sandbox is enforced by lint', () => {
  test('a Node built-in imported into workflow code is a lint error', async () => {
    expect(await lint("import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n")).toEqual([
      expect.stringContaining('Workflow code must not import Node modules'),
    ]);
  });

  test('the database package cannot be imported into workflow code at runtime', async () => {
    expect(
      await lint("import { createDatabase } from '@activity-core/db';\nexport const x = createDatabase;\n"),
    ).toHaveLength(1);
  });

  test('type-only imports of activities and contracts are allowed', async () => {
    expect(
      await lint(
        "import type { Effects } from '../effects';\nimport type { Task } from '@activity-core/contracts';\nexport type X = [Effects, Task];\n",
      ),
    ).toEqual([]);
  });
});
