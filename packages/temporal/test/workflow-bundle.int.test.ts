import { readFile } from 'node:fs/promises';
import { describe, expect, test } from 'vitest';
import { inject } from 'vitest';

describe('the workflow bundle', () => {
  test('bundles without Node modules and exports both workflows', async () => {
    // global-setup built it with bundleWorkflowCode, which refuses Node built-ins.
    const code = await readFile(inject('workflowBundlePath'), 'utf8');
    expect(code).toContain('RunActivityWorkflow');
    expect(code).toContain('TaskWorkflow');
    expect(code).not.toMatch(/require\(["'](node:)?(fs|net|http|child_process|pg)["']\)/);
  });

  test('holds no schema library: zod never reaches the workflow sandbox', async () => {
    // Workflow code imports pure subpaths of contracts (ids, duration, task-graph); a pure module that
    // reaches the zod barrel drags the schema library into every sandbox (seen once: the bundle grew
    // from 3.8 to 5.1 MB and the worker by 23 MB).
    const code = await readFile(inject('workflowBundlePath'), 'utf8');
    expect(code.match(/node_modules[\\/]zod[\\/]/g) ?? []).toEqual([]);
  });
});
