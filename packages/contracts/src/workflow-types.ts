/**
 * Types that cross the Temporal boundary: workflow inputs and results. Type
 * declarations only, so workflow code can import them freely.
 */
import type { ActivityDefinition, Task } from './activity-definition';
import type { TaskStatus, TriggerType } from './api';
import type { EventEnvelope } from './event-envelope';

/** The definition version a run executes, captured when the run was triggered. */
export interface ActivitySnapshot {
  id: string;
  name: string;
  version: number;
  definition: ActivityDefinition;
}

/** What the run of a debounce window or a batch is told about it (docs/coalescing.md). */
export interface CoalescedSummary {
  kind: 'debounce' | 'batch';
  window_id: string;
  /** Events in the window, this run's event included. */
  count: number;
  first_event_id: string;
  last_event_id: string;
}

export type RunTrigger =
  | {
      type: 'event';
      event: EventEnvelope;
      /**
       * How many emit_event steps lie between this event and an external one
       * (0 or absent: posted, webhook or cron-born). Absent in runs started
       * before hops were counted.
       */
      hops?: number;
      /**
       * The run of a debounce window (docs/coalescing.md): `event` is the
       * window's last event, and this says how many events the window merged.
       * Absent on runs of one event.
       */
      coalesced?: CoalescedSummary;
      /**
       * The run of a batch (docs/coalescing.md, "Batching"): every member's
       * envelope in arrival order; `event` is the last of them. Absent on
       * every other run.
       */
      events?: EventEnvelope[];
    }
  | {
      type: 'cron' | 'backfill';
      /** Nominal fire time, `YYYY-MM-DDTHH:MM:SS+00:00`. */
      scheduled_for: string;
      /** Context window `[window_start, window_end)`; window_end is scheduled_for. */
      window_start: string;
      window_end: string;
      /**
       * Cron runs: the index of the trigger whose schedule started the run; its
       * `overlap` policy applies. Absent on backfills and on inputs written
       * without it; such runs overlap freely.
       */
      trigger_index?: number;
    }
  | { type: 'manual'; key: string; requested_at: string; requested_by?: string }
  | {
      /** Started by a `run_activity` task of another run, which waits for it. */
      type: 'call';
      parent: { run_id: string; workflow_id: string; activity_id: string; task_index: number; item_index?: number };
      /** The task's rendered `input`: `{{ input.… }}` in this run's templates. */
      input: Record<string, unknown>;
      /** The activity ids of the calling runs, outermost first: refused again (a cycle) and bounded (depth). */
      chain: string[];
      /** The outermost calling run: the runs its chain of calls starts are counted against it (MAX_CALLS_PER_ROOT). */
      root_run_id: string;
    };

export interface RunActivityInput {
  activity: ActivitySnapshot;
  trigger: RunTrigger;
  /**
   * Only on a re-run from the failed task: tasks before `from_index` are not
   * executed again; their recorded outcomes (`prior`, from the run being
   * re-run) go into the run context, so templates see them as if the tasks had
   * just run. Absent on every other run (and in every older history).
   */
  resume?: RunResume;
}

export interface RunResume {
  from_index: number;
  /** One entry per task before `from_index`, with the task workflow that produced it in the run being re-run. */
  prior: Array<{ index: number; type: string; workflow_id: string; status: 'succeeded' | 'failed'; result?: unknown }>;
}

/** What templating in task configs can read. */
export interface RunContext {
  run: {
    run_id: string;
    workflow_id: string;
    trigger_type: TriggerType;
    scheduled_for?: string;
    window_start?: string;
    window_end?: string;
    /** The triggering event's hop count (see RunTrigger); absent when 0 or unknown. */
    event_hops?: number;
    /** Only in a run started by a `run_activity` task: the calling run. */
    parent_run_id?: string;
    /** Only in a run started by a `run_activity` task: the activity ids of the calling runs, outermost first. */
    call_chain?: string[];
    /** Only in a run started by a `run_activity` task: the outermost calling run. */
    call_root_run_id?: string;
  };
  activity: { id: string; name: string; version: number };
  event?: EventEnvelope;
  /** Only in the run of a batch: its events in arrival order (`event` is the last). */
  events?: EventEnvelope[];
  /** Only in a run started by a `run_activity` task: the input it was given. */
  input?: Record<string, unknown>;
  /**
   * Results of earlier tasks: by index in a straight-line run; in a graph run
   * a map holding each settled task under its key (when it has one) and its
   * index, so `{{ tasks.<key>.result }}` and `{{ tasks.<index>.result }}` both read.
   */
  tasks: RunContextTask[] | Record<string, RunContextTask>;
  /** In an item of a `for_each` task: the item's value. */
  item?: unknown;
  /** In an item of a `for_each` task: the item's 0-based position. */
  item_index?: number;
}

/** One settled task as later tasks' templates and conditions read it. */
export interface RunContextTask {
  index: number;
  type: string;
  status: TaskStatus;
  result?: unknown;
}

export interface TaskWorkflowInput {
  runId: string;
  runWorkflowId: string;
  index: number;
  task: Task;
  /** The definition's default retry policy, applied when the task has none. */
  defaultRetry?: ActivityDefinition['retry'];
  context: RunContext;
  /** Only for an item of a `for_each` task: its 0-based position (its value is `context.item`). */
  itemIndex?: number;
  /** Only in graph runs: the task's key, recorded on its task instance. */
  taskKey?: string;
}

export interface TaskOutcome {
  index: number;
  type: string;
  workflowId: string;
  /** `skipped` only in graph runs: the task's condition was false or its trigger rule did not let it run. */
  status: 'succeeded' | 'failed' | 'skipped';
  result?: unknown;
  error?: { message: string; type?: string };
}

export interface RunOutcome {
  runId: string;
  /** `skipped`: the concurrency limit was reached and the definition says `on_limit: skip`, or the cron trigger's overlap policy skipped the run. */
  status: 'succeeded' | 'failed' | 'skipped';
  tasks: TaskOutcome[];
}
