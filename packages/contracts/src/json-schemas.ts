import { z } from 'zod';
import { ActivityDefinition } from './activity-definition';
import { ActivityVersion, ActivityVersionPage, DefinitionDiff } from './definition-history';
import { CloudEvent, EventEnvelope, EventEnvelopeInput } from './event-envelope';
import { resolveOnWrite } from './schema-patterns';
import { BulkRerunRecord, BulkRerunRequest, RerunRequest, RerunResponse } from './reruns';
import { RunOutcomeEventData } from './system-events';

/**
 * JSON Schemas published in `schemas/`, generated from the zod models (never
 * the reverse). Request bodies in input mode: they describe what a client may
 * send, defaults included; responses in output mode: what the API sends. Cross-field rules (dedupe_key_strategy ↔ misfire_policy, cron
 * syntax, timezones) are enforced by the API and stated in descriptions.
 */
export function generateJsonSchemas(): Record<string, unknown> {
  const schema = (model: z.ZodType, id: string, title: string, io: 'input' | 'output' = 'input') => {
    const generated = z.toJSONSchema(model, { io, target: 'draft-2020-12', unrepresentable: 'any' });
    // Limits checked only on writes hold for what a client sends, not for every stored value read back.
    resolveOnWrite(generated, io === 'input');
    return { $id: `https://activity-core.local/schemas/${id}`, title, ...generated };
  };
  return {
    'event-envelope.schema.json': schema(EventEnvelope, 'event-envelope.schema.json', 'Event envelope'),
    'event-envelope-input.schema.json': schema(
      EventEnvelopeInput,
      'event-envelope-input.schema.json',
      'Event envelope as posted (event_id optional)',
    ),
    'cloudevent.schema.json': schema(
      CloudEvent,
      'cloudevent.schema.json',
      'CloudEvents 1.0 structured JSON accepted by POST /v1/events',
    ),
    'activity-definition.schema.json': schema(
      ActivityDefinition,
      'activity-definition.schema.json',
      'Activity definition',
    ),
    // Responses (output mode: what the API sends).
    'activity-version.schema.json': schema(
      ActivityVersion,
      'activity-version.schema.json',
      'One version of an activity definition (GET /v1/activities/{id}/versions/{version})',
      'output',
    ),
    'activity-version-page.schema.json': schema(
      ActivityVersionPage,
      'activity-version-page.schema.json',
      'A page of activity versions (GET /v1/activities/{id}/versions)',
      'output',
    ),
    'definition-diff.schema.json': schema(
      DefinitionDiff,
      'definition-diff.schema.json',
      'A diff between two definition versions (GET /v1/activities/{id}/diff)',
      'output',
    ),
    'rerun-request.schema.json': schema(
      RerunRequest,
      'rerun-request.schema.json',
      'Re-run one run (POST /v1/runs/{run_id}/rerun)',
    ),
    'bulk-rerun-request.schema.json': schema(
      BulkRerunRequest,
      'bulk-rerun-request.schema.json',
      'Re-run the runs a filter selects (POST /v1/runs/rerun)',
    ),
    'rerun-response.schema.json': schema(
      RerunResponse,
      'rerun-response.schema.json',
      'A re-run requested (POST /v1/runs/{run_id}/rerun)',
      'output',
    ),
    'bulk-rerun.schema.json': schema(
      BulkRerunRecord,
      'bulk-rerun.schema.json',
      'The progress record of a bulk re-run (GET /v1/runs/rerun/{id})',
      'output',
    ),
    // The data of the system events the service emits (activity_core.run.failed / .cancelled).
    'run-outcome-event-data.schema.json': schema(
      RunOutcomeEventData,
      'run-outcome-event-data.schema.json',
      'Data of the activity_core.run.failed and activity_core.run.cancelled system events',
      'output',
    ),
  };
}

export function renderJsonSchema(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
