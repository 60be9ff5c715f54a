/**
 * Deepest nesting accepted in the JSON of a definition (http `body`,
 * emit_event `data`, run_activity `input`). A module of its own, importing
 * nothing, so workflow code (task-graph.ts) can read it without zod.
 */
export const DEFINITION_JSON_MAX_DEPTH = 32;
