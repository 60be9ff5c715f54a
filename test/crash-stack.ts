import { Client, Connection } from '@temporalio/client';
import type pg from 'pg';
import { createApiApp, type ApiApp } from '../apps/api/src/app';
import { createWorkerApp, type WorkerApp } from '../apps/worker/src/worker-app';
import { createTestDatabase, silentLogger, testConfig, testPool, workflowBundle } from './harness';
import { killHard, type SpawnedProcess } from './worker-process';

/**
 * The stack of a test that SIGKILLs an API process in the middle of a job it
 * carries out (a bulk replay, a dead-letter retry): its own database, an
 * in-process worker, an in-process API whose dispatcher finishes what the
 * killed process left (bulk re-runs off), a Temporal client and a pool. The
 * test spawns the API processes it kills (`spawnApiProcess(stack.config, …)`)
 * and hands them to `spawned`; `close()` kills what is still running and
 * stops the rest.
 */
export interface CrashStack {
  config: ReturnType<typeof testConfig>;
  api: ApiApp;
  worker: WorkerApp;
  client: Client;
  sql: pg.Pool;
  spawned: SpawnedProcess[];
  /** A request to the in-process API: its status and JSON body. */
  inject(method: 'GET' | 'POST' | 'PUT', url: string, payload?: object): Promise<{ status: number; json: any }>;
  close(): Promise<void>;
}

export async function startCrashStack(): Promise<CrashStack> {
  const database = await createTestDatabase();
  const config = testConfig(database.url);
  const worker = await createWorkerApp(config, { logger: silentLogger, workflowBundle: await workflowBundle() });
  void worker.run();
  const connection = await Connection.connect({ address: config.temporal.address });
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const sql = testPool(database.url, 2);
  const api = await createApiApp(config, { logger: false, dispatcherIntervalMs: 200, bulkReruns: false });
  const spawned: SpawnedProcess[] = [];
  return {
    config,
    api,
    worker,
    client,
    sql,
    spawned,
    async inject(method, url, payload) {
      const response = await api.server.inject({ method, url, ...(payload === undefined ? {} : { payload }) });
      return { status: response.statusCode, json: response.json() };
    },
    async close() {
      for (const process of spawned) await killHard(process.child);
      await api.close();
      await worker.close();
      await connection.close();
      await sql.end();
      await database.drop();
    },
  };
}
