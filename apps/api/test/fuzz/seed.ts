import type { FastifyInstance } from 'fastify';

/**
 * Real resources for the fuzzer to aim at. Random path ids only ever reach
 * the 404 branch; with these, a share of the generated requests for
 * `/v1/activities/{id}/…`, `/v1/runs/{run_id}` and the rest reach the code
 * behind the lookup (schedules in Temporal, run cancellation, …).
 */
export interface SeededResources {
  /** Path parameter name → values that name an existing resource. */
  values: Record<string, string[]>;
  /** Seeding steps the API refused with a 4xx (its contract moved); the fuzz run goes on without them. */
  skipped: string[];
}

export async function seedResources(
  server: FastifyInstance,
  headers: Record<string, string>,
): Promise<SeededResources> {
  const values: Record<string, string[]> = { id: [], activity_id: [], run_id: [], event_id: [], name: [], source: [] };
  const skipped: string[] = [];
  const call = async (
    method: 'POST' | 'GET',
    url: string,
    payload?: object,
  ): Promise<Record<string, unknown> | undefined> => {
    const response = await server.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
    if (response.statusCode >= 500)
      throw new Error(`seeding ${method} ${url} answered ${response.statusCode}: ${response.body}`);
    if (response.statusCode >= 400) {
      skipped.push(`${method} ${url} → ${response.statusCode}: ${response.body.slice(0, 300)}`);
      return undefined;
    }
    return response.json();
  };

  const activity = await call('POST', '/v1/activities', {
    name: 'fuzz-seeded',
    // Once a year: a real Temporal Schedule that never fires during the run.
    triggers: [
      { type: 'cron', cron: '0 0 1 1 *' },
      { type: 'event', event_type: 'fuzz.seeded' },
    ],
    tasks: [{ type: 'noop' }],
  });
  const activityId = typeof activity?.id === 'string' ? activity.id : undefined;
  if (activityId !== undefined) {
    values.id!.push(activityId);
    values.activity_id!.push(activityId);
  }

  const accepted = await call('POST', '/v1/events', {
    event_id: 'fuzz-seeded-1',
    event_type: 'fuzz.seeded',
    source: 'fuzz',
    occurred_at: new Date().toISOString(),
    data: { n: 1 },
  });
  if (accepted !== undefined) values.event_id!.push(String(accepted.event_id));
  for (const run of (accepted?.runs as Array<{ run_id?: unknown }> | undefined) ?? [])
    if (typeof run.run_id === 'string') values.run_id!.push(run.run_id);

  if (activityId !== undefined) {
    const triggered = await call('POST', `/v1/activities/${activityId}/schedules/trigger`);
    if (typeof triggered?.run_id === 'string') values.run_id!.push(triggered.run_id);
  }

  // Run rows are written as the worker starts the runs; wait for them (best effort) so the ids resolve.
  const deadline = Date.now() + 30_000;
  while (values.run_id!.length > 0 && Date.now() < deadline) {
    const found = await Promise.all(
      values.run_id!.map(
        async (runId) => (await server.inject({ method: 'GET', url: `/v1/runs/${runId}`, headers })).statusCode === 200,
      ),
    );
    if (found.every(Boolean)) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  const source = await call('POST', '/v1/webhook-sources', {
    name: 'fuzz-hooks',
    scheme: 'hmac_sha256',
    secret: 'fuzz-webhook-secret-0123456789abcdef',
    signature_header: 'X-Fuzz-Signature',
    signature_prefix: 'sha256=',
    timestamp_header: 'X-Fuzz-Timestamp',
  });
  if (typeof source?.name === 'string') {
    values.name!.push(source.name);
    values.source!.push(source.name);
  }

  return { values: Object.fromEntries(Object.entries(values).filter(([, list]) => list.length > 0)), skipped };
}

/** An operation of the served OpenAPI document, named as schemathesis names it (`GET /v1/runs/{run_id}`). */
export interface DocumentedOperation {
  name: string;
  parameters: { in: string; name: string }[];
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);

/** Every operation of an OpenAPI document. */
export function documentedOperations(document: {
  paths?: Record<string, Record<string, unknown>>;
}): DocumentedOperation[] {
  return Object.entries(document.paths ?? {}).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, operation]) => ({
        name: `${method.toUpperCase()} ${path}`,
        parameters: ((operation as { parameters?: { in: string; name: string }[] }).parameters ?? []).map(
          (parameter) => ({ in: parameter.in, name: parameter.name }),
        ),
      })),
  );
}

/** A TOML basic string (JSON's escapes are valid TOML ones for the strings used here). */
const tomlString = (value: string): string => JSON.stringify(value);

/**
 * A schemathesis.toml that binds path parameters to the seeded values for
 * half of the generated requests (the other half stay random). Bound per
 * operation, DELETEs excluded: deleting the seeded resources early would
 * leave every later operation with 404s only.
 */
export function schemathesisConfig(operations: readonly DocumentedOperation[], seeded: SeededResources): string {
  const lines: string[] = [];
  for (const [parameter, list] of Object.entries(seeded.values)) {
    lines.push(`[dictionaries.${parameter}]`, `values = [${list.map(tomlString).join(', ')}]`, '');
  }
  for (const operation of operations) {
    if (operation.name.startsWith('DELETE ')) continue;
    const bound = operation.parameters.filter(
      (parameter) =>
        (parameter.in === 'path' || parameter.in === 'query') && seeded.values[parameter.name] !== undefined,
    );
    if (bound.length === 0) continue;
    lines.push(
      '[[operations]]',
      `include-name = ${tomlString(operation.name)}`,
      `parameters = { ${bound.map((parameter) => `${tomlString(`${parameter.in}.${parameter.name}`)} = { dictionary = ${tomlString(parameter.name)}, probability = 0.5 }`).join(', ')} }`,
      '',
    );
  }
  return lines.join('\n');
}
