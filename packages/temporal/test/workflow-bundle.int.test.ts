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
});
