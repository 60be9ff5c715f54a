import type { Config } from '@activity-core/config';
import { freePort } from '@activity-core/dev-services';
import type pg from 'pg';
import { Client, Connection } from '@temporalio/client';
import { expect } from 'vitest';
import { deleteSchedulesOf } from './harness';
import { startHttpTarget } from './http-target';
import { resilientPool } from './restartable-postgres';
import { spawnApiProcess, spawnWorkerProcess, stopGracefully, type SpawnedProcess } from './worker-process';

/** A JSON call to the spawned API: status and parsed body (null for 204). */
export type ApiCall = (method: string, path: string, body?: unknown) => Promise<{ status: number; json: any }>;

export interface FaultStack {
  api: SpawnedProcess;
  worker: SpawnedProcess;
  target: Awaited<ReturnType<typeof startHttpTarget>>;
  apiUrl: string;
  /** A pool that rides out the fault the test injects. */
  sql: pg.Pool;
  call: ApiCall;
  /** The activity the load's events trigger; its http task calls `target` at /hook. */
  eventActivityId: string;
  /** A cron activity firing every CRON_PERIOD_S seconds through the fault. */
  cronActivityId: string;
  /** The Idempotency-Key of every request the http tasks sent. */
  httpKeys(): string[];
  /** Fails the test when the API or the worker process has exited. */
  alive(): void;
  stop(): Promise<void>;
}

/**
 * The fault stack's cron period. Shorter than the fault windows (8 s at the
 * shortest), so schedule fires land inside every fault; long enough that its
 * runs stay few beside the event load.
 */
export const CRON_PERIOD_S = 5;

/**
 * What both fault suites run against: the real API and worker entry points as
 * separate processes (so "no process exited" can be checked), an http target,
 * an event activity with the given tasks and a cron activity firing every
 * CRON_PERIOD_S seconds.
 */
export async function startFaultStack(options: {
  name: string;
  config: Config;
  databaseUrl: string;
  eventType: string;
  tasks: Array<{ type: string; config?: object }>;
}): Promise<FaultStack> {
  const target = await startHttpTarget();
  const port = await freePort();
  const apiUrl = `http://127.0.0.1:${port}`;
  const api = spawnApiProcess(options.config, port, { CRON_ALLOW_SECONDS: 'true' });
  const worker = spawnWorkerProcess(options.config, { CRON_ALLOW_SECONDS: 'true' });
  await Promise.all([api.ready, worker.ready]);
  const sql = resilientPool(options.databaseUrl);
  const call: ApiCall = async (method, path, body) => {
    const response = await fetch(`${apiUrl}${path}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    return { status: response.status, json: response.status === 204 ? null : await response.json() };
  };
  const tasks = options.tasks.map((task) =>
    task.type === 'http' ? { ...task, config: { url: `${target.url}/hook` } } : task,
  );
  const created = await call('POST', '/v1/activities', {
    name: `${options.name}-events`,
    triggers: [{ type: 'event', event_type: options.eventType }],
    tasks,
  });
  expect(created.status, JSON.stringify(created.json)).toBe(201);
  const cron = await call('POST', '/v1/activities', {
    name: `${options.name}-cron`,
    triggers: [{ type: 'cron', cron: `*/${CRON_PERIOD_S} * * * * *` }],
    tasks: [{ type: 'noop' }],
  });
  expect(cron.status, JSON.stringify(cron.json)).toBe(201);
  return {
    api,
    worker,
    target,
    apiUrl,
    sql,
    call,
    eventActivityId: created.json.id,
    cronActivityId: cron.json.id,
    httpKeys: () =>
      target.requests.filter((r) => r.url === '/hook').map((r) => String(r.headers['idempotency-key'] ?? '')),
    alive: () => {
      expect(api.exited(), `the API exited:\n${api.output().slice(-3_000)}`).toBeNull();
      expect(worker.exited(), `the worker exited:\n${worker.output().slice(-3_000)}`).toBeNull();
    },
    stop: async () => {
      await stopGracefully(api.child);
      await stopGracefully(worker.child);
      // The cron must not outlive the file on a server other files share.
      const connection = await Connection.connect({ address: options.config.temporal.address, connectTimeout: 5_000 });
      try {
        await deleteSchedulesOf(
          new Client({ connection, namespace: options.config.temporal.namespace }),
          options.config.temporal.taskQueue,
        );
      } finally {
        await connection.close();
      }
      await sql.end();
      await target.close();
    },
  };
}
