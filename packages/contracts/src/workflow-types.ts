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
  | { type: 'manual'; key: string; requested_at: string; requested_by?: string };

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
  };
  activity: { id: string; name: string; version: number };
  event?: EventEnvelope;
  /** Results of earlier tasks by index. */
  tasks: Array<{ index: number; type: string; status: TaskStatus; result?: unknown }>;
}

export interface TaskWorkflowInput {
  runId: string;
  runWorkflowId: string;
  index: number;
  task: Task;
  /** The definition's default retry policy, applied when the task has none. */
  defaultRetry?: ActivityDefinition['retry'];
  context: RunContext;
}

export interface TaskOutcome {
  index: number;
  type: string;
  workflowId: string;
  status: 'succeeded' | 'failed';
  result?: unknown;
  error?: { message: string; type?: string };
}

export interface RunOutcome {
  runId: string;
  /** `skipped`: the concurrency limit was reached and the definition says `on_limit: skip`, or the cron trigger's overlap policy skipped the run. */
  status: 'succeeded' | 'failed' | 'skipped';
  tasks: TaskOutcome[];
}
