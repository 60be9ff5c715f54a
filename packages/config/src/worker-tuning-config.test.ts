import { describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from './index';

const base = { DATABASE_URL: 'postgres://x/y' };

function issues(env: Record<string, string>): string[] {
  try {
    loadConfig({ ...base, ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error.issues;
    throw error;
  }
  return [];
}

describe('the worker cache and slot settings', () => {
  test('default to a small workflow cache and bounded slots instead of the SDK heap-sized cache', () => {
    expect(loadConfig(base).worker).toEqual({
      metricsBindAddress: null,
      maxCachedWorkflows: 20,
      maxConcurrentWorkflowTasks: 10,
      maxConcurrentActivities: 100,
      maxConcurrentLocalActivities: 100,
    });
  });

  test('are read from WORKER_MAX_*', () => {
    const config = loadConfig({
      ...base,
      WORKER_MAX_CACHED_WORKFLOWS: '500',
      WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '40',
      WORKER_MAX_CONCURRENT_ACTIVITIES: '20',
      WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: '10',
    });
    expect(config.worker).toMatchObject({
      maxCachedWorkflows: 500,
      maxConcurrentWorkflowTasks: 40,
      maxConcurrentActivities: 20,
      maxConcurrentLocalActivities: 10,
    });
  });

  test('refuse more workflow task slots than cached workflows, naming both settings', () => {
    expect(issues({ WORKER_MAX_CACHED_WORKFLOWS: '20', WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '40' })).toEqual([
      'WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: must be at most WORKER_MAX_CACHED_WORKFLOWS (a workflow task needs its workflow in the cache)',
    ]);
  });

  test('refuse turning the workflow cache off, which would drop local activities in flight', () => {
    expect(issues({ WORKER_MAX_CACHED_WORKFLOWS: '0', WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '2' })[0]).toMatch(
      /^WORKER_MAX_CACHED_WORKFLOWS: /,
    );
  });

  test('refuse values outside their range, naming the setting', () => {
    expect(issues({ WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '1' })[0]).toMatch(/^WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: /);
    expect(issues({ WORKER_MAX_CONCURRENT_ACTIVITIES: '0' })[0]).toMatch(/^WORKER_MAX_CONCURRENT_ACTIVITIES: /);
  });
});
