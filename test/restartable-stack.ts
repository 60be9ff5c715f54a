import type pg from 'pg';

/**
 * Load and invariants shared by the fault tests (test/fault-*.int.test.ts)
 * and the randomized fault loop (bench/fault-loop.ts): events posted the way
 * a well-behaved client posts them (retrying until acknowledged), and the
 * checks that must hold once everything has drained, whatever was injected.
 */

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface LoadOptions {
  apiUrl: string;
  eventType: string;
  /** Event ids are `${prefix}-${n}`. */
  prefix: string;
  count: number;
  /** Concurrent senders. @default 6 */
  senders?: number;
  /** Pause between one sender's posts. @default 30 */
  gapMs?: number;
  /** Send the events from this index on as one batch request of `batchSize`. */
  batchAt?: number;
  batchSize?: number;
  /** Fails the load at once when this says the API is gone (rather than retrying into a dead port). */
  apiExited?: () => unknown;
}

export interface Load {
  /** Event ids the API acknowledged with 202. */
  acked: Set<string>;
  /** Answers other than 202, by status (503 while Postgres is away). */
  refused: Map<number, number>;
  /** Resolves when every event has been acknowledged. */
  done: Promise<void>;
}

const envelope = (eventType: string, id: string) => ({
  event_id: id,
  event_type: eventType,
  source: 'fault-tests',
  occurred_at: '2026-03-01T09:00:00Z',
  data: { id },
});

export function startLoad(options: LoadOptions): Load {
  const acked = new Set<string>();
  const refused = new Map<number, number>();
  const senders = options.senders ?? 6;
  const gapMs = options.gapMs ?? 30;
  const batchSize = options.batchSize ?? 10;
  let next = 0;

  const post = async (body: unknown): Promise<{ status: number; json: any; retryAfter: number }> => {
    const response = await fetch(`${options.apiUrl}/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      json: await response.json().catch(() => undefined),
      retryAfter: Number(response.headers.get('retry-after') ?? 1),
    };
  };

  /** Posts until every id in `ids` is acknowledged, as a client honouring 503 + Retry-After does. */
  const sendUntilAcked = async (ids: string[]): Promise<void> => {
    let waiting = ids;
    for (let attempt = 0; waiting.length > 0; attempt++) {
      if (options.apiExited?.() != null)
        throw new Error(
          `the API process exited (${String(options.apiExited())}) with ${waiting.length} events unacknowledged`,
        );
      try {
        const answer = await post(
          waiting.length === 1
            ? envelope(options.eventType, waiting[0]!)
            : waiting.map((id) => envelope(options.eventType, id)),
        );
        if (answer.status === 202) {
          if (waiting.length === 1) {
            acked.add(waiting[0]!);
            waiting = [];
          } else {
            const results = answer.json.results as { index: number; ok: boolean }[];
            for (const result of results) if (result.ok) acked.add(waiting[result.index]!);
            waiting = waiting.filter((id) => !acked.has(id));
          }
          continue;
        }
        refused.set(answer.status, (refused.get(answer.status) ?? 0) + 1);
        if (answer.status !== 503 && answer.status !== 429)
          throw new Error(`unexpected ${answer.status}: ${JSON.stringify(answer.json)}`);
        // Retry-After is a hint in seconds; a test keeps it short.
        await sleep(Math.min(1_000, Math.max(200, answer.retryAfter * 250)));
      } catch (error) {
        if ((error as Error).message.startsWith('unexpected')) throw error;
        // The connection failed (the API restarting, or gone: the check above decides).
        await sleep(Math.min(1_000, 100 * (attempt + 1)));
      }
    }
  };

  const sender = async (): Promise<void> => {
    while (next < options.count) {
      const start = next;
      const size =
        options.batchAt !== undefined && start === options.batchAt ? Math.min(batchSize, options.count - start) : 1;
      next += size;
      await sendUntilAcked(Array.from({ length: size }, (_, i) => `${options.prefix}-${start + i}`));
      await sleep(gapMs);
    }
  };
  const done = Promise.all(Array.from({ length: senders }, sender)).then(() => undefined);
  done.catch(() => undefined);
  return { acked, refused, done };
}

/** Polls `check` until it returns true; throws with `describe()` after `timeoutMs`. */
export async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  describe?: () => Promise<string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out waiting for ${what}${last ? `: ${String(last)}` : ''}${describe ? `\n${await describe().catch(String)}` : ''}`,
      );
    await sleep(250);
  }
}

export interface InvariantInput {
  sql: pg.Pool;
  acked: Set<string>;
  /** The event-triggered activity and its task count. */
  eventActivityId: string;
  tasksPerRun: number;
  /** Idempotency-Key of every request the http target received (one http task per event run). */
  httpKeys: string[];
  /** A cron-triggered activity whose runs must each be alone for their fire time. */
  cronActivityId?: string;
}

/** Everything in flight has settled: nothing pending routing, no run running, a run for every acknowledged event. */
export async function drained(input: Pick<InvariantInput, 'sql' | 'acked' | 'eventActivityId'>): Promise<boolean> {
  const { rows } = await input.sql.query(
    `SELECT (SELECT count(*) FROM events WHERE routing_state = 'pending')::int AS pending,
            (SELECT count(*) FROM activity_runs WHERE status = 'running')::int AS running,
            (SELECT count(*) FROM activity_runs WHERE activity_id = $1)::int AS runs,
            (SELECT count(*) FROM task_instances WHERE status = 'running')::int AS tasks_running`,
    [input.eventActivityId],
  );
  const row = rows[0] as { pending: number; running: number; runs: number; tasks_running: number };
  return row.pending === 0 && row.running === 0 && row.tasks_running === 0 && row.runs >= input.acked.size;
}

export async function describeState(sql: pg.Pool): Promise<string> {
  const { rows } = await sql.query(
    `SELECT 'events ' || routing_state AS what, count(*)::int AS n FROM events GROUP BY 1
     UNION ALL SELECT 'runs ' || status, count(*)::int FROM activity_runs GROUP BY 1
     UNION ALL SELECT 'tasks ' || status, count(*)::int FROM task_instances GROUP BY 1 ORDER BY 1`,
  );
  return rows.map((row) => `${row.what}: ${row.n}`).join(', ');
}

/**
 * The promise, checked after everything drained. Returns the violations
 * (empty when all hold) so a test can show all of them at once.
 */
export async function checkInvariants(input: InvariantInput): Promise<string[]> {
  const problems: string[] = [];
  const { sql } = input;
  const acked = [...input.acked];

  // Every acknowledged event is stored and routed.
  const events = await sql.query(`SELECT event_id, routing_state FROM events WHERE event_id = ANY($1)`, [acked]);
  if (events.rows.length !== acked.length)
    problems.push(`${acked.length - events.rows.length} acknowledged events are not stored`);
  const unrouted = events.rows.filter((row) => row.routing_state !== 'routed');
  if (unrouted.length > 0) problems.push(`${unrouted.length} acknowledged events are not routed`);

  // Exactly one run per acknowledged event, and none for anything else.
  const runs = await sql.query(
    `SELECT event_id, count(*)::int AS n FROM activity_runs WHERE activity_id = $1 GROUP BY event_id`,
    [input.eventActivityId],
  );
  const runsByEvent = new Map(runs.rows.map((row) => [row.event_id as string, row.n as number]));
  const missing = acked.filter((id) => !runsByEvent.has(id));
  if (missing.length > 0)
    problems.push(`${missing.length} acknowledged events have no run (e.g. ${missing.slice(0, 3).join(', ')})`);
  const doubled = [...runsByEvent].filter(([, n]) => n > 1);
  if (doubled.length > 0) problems.push(`${doubled.length} events have more than one run (e.g. ${doubled[0]![0]})`);
  const unexpected = [...runsByEvent.keys()].filter((id) => !input.acked.has(id));
  if (unexpected.length > 0) problems.push(`${unexpected.length} runs belong to events never acknowledged`);

  // Every run ended, successfully (the faults are all transient).
  const statuses = await sql.query(`SELECT status, count(*)::int AS n FROM activity_runs GROUP BY status`);
  for (const row of statuses.rows) if (row.status !== 'succeeded') problems.push(`${row.n} runs are ${row.status}`);

  // One task row per task of every run, each ended.
  const tasks = await sql.query(
    `SELECT r.run_id, count(t.id)::int AS n, count(DISTINCT t.task_index)::int AS distinct_indexes, coalesce(bool_and(t.status = 'succeeded'), false) AS all_succeeded
       FROM activity_runs r LEFT JOIN task_instances t ON t.run_id = r.run_id
      WHERE r.activity_id = $1 GROUP BY r.run_id`,
    [input.eventActivityId],
  );
  const wrongCount = tasks.rows.filter(
    (row) => row.n !== input.tasksPerRun || row.distinct_indexes !== input.tasksPerRun,
  );
  if (wrongCount.length > 0)
    problems.push(
      `${wrongCount.length} runs do not have exactly ${input.tasksPerRun} task rows (e.g. ${wrongCount[0].run_id}: ${wrongCount[0].n})`,
    );
  const unfinished = tasks.rows.filter((row) => !row.all_succeeded);
  if (unfinished.length > 0) problems.push(`${unfinished.length} runs have a task that did not succeed`);
  const orphans = await sql.query(
    `SELECT count(*)::int AS n FROM task_instances t WHERE NOT EXISTS (SELECT 1 FROM activity_runs r WHERE r.run_id = t.run_id)`,
  );
  if (orphans.rows[0].n > 0) problems.push(`${orphans.rows[0].n} task rows belong to no run`);

  // One side-effect key per http task: retries reuse it, nothing mints a second one.
  const keys = new Set(input.httpKeys);
  if (input.httpKeys.some((key) => key === '')) problems.push('an http task request carried no Idempotency-Key');
  if (keys.size !== runsByEvent.size)
    problems.push(`${keys.size} distinct Idempotency-Keys reached the target for ${runsByEvent.size} http tasks`);

  if (input.cronActivityId !== undefined) {
    const cron = await sql.query(
      `SELECT scheduled_for, count(*)::int AS n FROM activity_runs WHERE activity_id = $1 GROUP BY scheduled_for HAVING count(*) > 1`,
      [input.cronActivityId],
    );
    if (cron.rows.length > 0) problems.push(`${cron.rows.length} cron fire times have more than one run`);
  }
  return problems;
}
