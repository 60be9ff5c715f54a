import { z } from 'zod';
import { StoredActivityDefinition } from './activity-definition';
import { JsonPatchOperation } from './json-patch';

/**
 * The version history of an activity definition as the API reports it
 * (`GET /v1/activities/{id}/versions`, `…/versions/{version}`, `…/diff`).
 */

/** Versions are Postgres `integer`s counted from 1. */
export const MAX_DEFINITION_VERSION = 2_147_483_647;

const Timestamp = z.string().meta({ format: 'date-time' });

const ChangedBy = z
  .string()
  .nullable()
  .meta({
    description:
      "Which credential wrote this version: `api_key:<key id>` (12 hex digits of the key's SHA-256, never the key) or `anonymous` while authentication is off; " +
      'null for versions written before changes were attributed.',
  });

export const ActivityVersionSummary = z
  .object({
    activity_id: z.uuid(),
    version: z.number().int().min(1),
    name: z.string(),
    enabled: z.boolean(),
    changed_at: Timestamp.meta({
      description: 'When this version was written (the create, replace, enable or disable that made it).',
    }),
    changed_by: ChangedBy,
  })
  .meta({ id: 'ActivityVersionSummary', description: 'One version of an activity definition: who wrote it and when.' });
export type ActivityVersionSummary = z.infer<typeof ActivityVersionSummary>;

export const ActivityVersion = ActivityVersionSummary.extend({ definition: StoredActivityDefinition }).meta({
  id: 'ActivityVersion',
  description: 'One version of an activity definition with the definition as it was stored.',
});
export type ActivityVersion = z.infer<typeof ActivityVersion>;

export const ActivityVersionPage = z
  .object({
    activity_id: z.uuid(),
    current_version: z
      .number()
      .int()
      .min(1)
      .meta({ description: 'The newest version (the one a live activity runs).' }),
    deleted_at: Timestamp.nullable().meta({
      description: 'When the activity was deleted; null while it is live. A deleted activity keeps its history.',
    }),
    deleted_by: z.string().nullable().meta({
      description:
        'Which credential deleted it (`api_key:<key id>` or `anonymous`); null while live, and for activities deleted before deletions were attributed.',
    }),
    items: z.array(ActivityVersionSummary).meta({ description: 'Versions, newest first.' }),
    next_cursor: z.string().nullable(),
  })
  .meta({
    id: 'ActivityVersionPage',
    description: "A page of an activity's versions, newest first, and whether (and by whom) the activity was deleted.",
  });
export type ActivityVersionPage = z.infer<typeof ActivityVersionPage>;

export const DefinitionDiff = z
  .object({
    activity_id: z.uuid(),
    from: ActivityVersionSummary,
    to: ActivityVersionSummary,
    patch: z.array(JsonPatchOperation).meta({
      description:
        'RFC 6902 JSON Patch that turns the `from` definition into the `to` definition; `[]` when they are equal.',
    }),
  })
  .meta({ id: 'DefinitionDiff', description: 'What changed between two versions of an activity definition.' });
export type DefinitionDiff = z.infer<typeof DefinitionDiff>;
