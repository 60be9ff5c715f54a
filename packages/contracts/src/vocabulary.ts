/**
 * The project's vocabulary: one meaning per word, in code, docs and logs
 * (docs/README.md, "Terms", says the same for readers; ADR 0063 says why).
 *
 * - **activity** — a user's registered unit of work: triggers plus ordered
 *   tasks, under one id. Never Temporal's activity (see *effect*).
 * - **definition** — an activity's body (`ActivityDefinition`); every change
 *   makes a new numbered **version**.
 * - **trigger** — what starts runs of an activity: an event type (with an
 *   optional CEL **filter**) or a cron expression.
 * - **event** — a CloudEvents-shaped envelope accepted at `POST /v1/events`,
 *   a webhook delivery, an `emit_event` task or a system event; stored once
 *   under its event id.
 * - **route** — the decision, at an event's first accept, about one activity
 *   whose trigger matched it: one run, or none because its filter said no
 *   (or its rate limit was reached: `dropped`), or merged into another
 *   event's run by a debounce window (`merged`), one of a batch's run's
 *   events (`batched`), or **held** for its disabled activity (`held`) until
 *   it is **released**, `discarded` or `expired`.
 * - **throttle**, **rate limit** — an activity's pacing of its event runs per
 *   key: over a throttle a run starts later (`not_before`), over a rate limit
 *   it is `dropped`; each key's state is a **bucket** (a `pacing_buckets` row).
 * - **priority** — 1 (highest) to 5, Temporal's task-queue priority of a run.
 * - **fairness key** — the key Temporal shares a run's task dispatch by within
 *   one priority (its activity's id, or its definition's `fairness.key`).
 * - **debounce window** — a burst of events of one (activity, key) that becomes
 *   one run (docs/coalescing.md): a `coalesce_windows` row and a
 *   `CoalesceWindowWorkflow`; every event of it but the last is **merged** into
 *   the last one's run.
 * - **batch** — the events of one (activity, key) collected in arrival order
 *   into one run over the list (docs/coalescing.md, "Batching"): a
 *   `coalesce_windows` row of kind `batch` and a `CoalesceWindowWorkflow`;
 *   every member is **batched** into the run `activity-{id}:batch:{window_id}`.
 * - **run** — one execution of one activity version for one trigger firing;
 *   a `RunActivityWorkflow` with a deterministic workflow id, a row in
 *   `activity_runs`.
 * - **task** — one entry of a definition's task list (`http`, `emit_event`,
 *   `wait_for_event`, `run_activity`, …).
 * - **task graph** — the tasks with what each **needs** (`depends_on`; absent:
 *   the task before it). A task is **settled** once it succeeded, failed or
 *   was **skipped**; its **trigger rule** says whether it runs after its needs
 *   settled, its condition (`if`) whether it runs at all.
 * - **item** — one element of a `for_each` task's list, run as its own task
 *   instance (`task-{run_id}:{type}:{index}:{item}`).
 * - **called run** — a run a `run_activity` task started (trigger type
 *   `call`); the run that started it is its **parent**, the outermost one of a
 *   chain its **root**.
 * - **task instance** — one task of one run; a `TaskWorkflow` child, a row in
 *   `task_instances`.
 * - **effect** — a Temporal activity: a function the worker registers and a
 *   workflow calls for anything with a side effect (`logRun`, `httpTask`, …;
 *   `packages/temporal/src/effects`). Its registered name is history and
 *   never changes.
 * - **schedule** — the Temporal Schedule behind one cron trigger.
 * - **tick** — one firing of a schedule, handled by a `ScheduleTickWorkflow`;
 *   a tick asks the schedule manager to decide the fires that are due.
 * - **fire** — one nominal fire time of a cron trigger and the decision taken
 *   for it (a run, or a skip with a reason); the decisions are the fire log.
 * - **schedule sweep** — a worker's periodic pass: schedule reconciliation
 *   against Temporal's listing, then the fires no tick decided.
 * - **schedule reconciliation** — making Temporal's schedules match the
 *   definitions in Postgres (`reconcile`).
 * - **run outcome recovery** — recording the outcome of runs whose workflow
 *   ended without recording it (terminated, timed out, history gone).
 * - **event retention purge** — forgetting routed events older than the
 *   retention.
 * - **re-run** — a new run of an existing run's activity version with the
 *   original's input, under its own id (`rerunWorkflowId`).
 * - **replay** — a stored event planned again against today's definitions:
 *   `if_no_runs` starts only the event's runs that never ran (their own
 *   ids); `force` starts new ones (`replayWorkflowId`); one event or a
 *   **bulk replay** by filter.
 * - **dead letter** — a route whose run could not be started and is not
 *   retried on its own (outcome `dead_letter`, a `reason_code`), listed with
 *   the `filter_error` routes until an operator retries it (against today's
 *   definition, under the event's own run id) or discards it.
 * - **backfill** — runs for past fire times of a cron trigger, asked for
 *   explicitly; one per missing fire.
 * - **decision log** — the recorded answer to "why did or didn't this run":
 *   an event's routes, a trigger's fires, a run's skips.
 * - **credential** — who delivered an event or made a change, recorded as a
 *   **credential label** (`api_key:<key id>`, `ingest_key:<key id>`,
 *   `webhook:<source>`, `emit:<run id>`, `system:<run id>`, `anonymous`),
 *   built and parsed in `ids.ts` only; never a key itself.
 * - **duplicate** — the expected answer when something that exists is
 *   delivered or started again; not an error.
 */
export {};
