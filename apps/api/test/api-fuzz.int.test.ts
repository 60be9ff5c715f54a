import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CONFORMANCE_CHECKS, findingsOf, unexplainedFailures, unstatedRulesBehind } from './fuzz/conformance';
import { describeFailure, findSchemathesis, fuzz } from './fuzz/schemathesis';
import { documentedOperations, schemathesisConfig, seedResources } from './fuzz/seed';
import { startStack, type TestStack } from '../../../test/harness';

/**
 * schemathesis generates requests for every operation of the served OpenAPI
 * document — valid and invalid inputs alike — and the API must answer each
 * without a 5xx, within the time limit, and as the document says: statuses,
 * media types, headers and bodies as documented, schema-invalid requests
 * refused, schema-valid ones accepted (unless a rule the document states in
 * words refuses them, see UNSTATED_RULES), undeclared methods answered 405,
 * authentication required where declared (fuzz/conformance.ts).
 *
 * Reproducible: the seed is fixed (FUZZ_SEED overrides it, e.g. to explore
 * further) and one worker keeps the order of requests stable. Shrinking is
 * off: a failure is reported as generated, which keeps the run short.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
/** Test cases per operation and phase; the coverage phase adds its own boundary cases on top. */
const MAX_EXAMPLES = 15;
const MIN_REQUESTS = 1_000;
/** Seconds an answer may take; the API's slowest paths (readiness, Temporal calls) stay well under it. */
const MAX_RESPONSE_SECONDS = 10;
/** Generous: about 1.5 minutes on an idle 2-core machine, much longer when it is busy. */
const RUN_TIMEOUT_MS = 480_000;

const MANAGEMENT_KEY = 'fuzz-management-key-0123456789abcdef0123456789';
// `Authorization` as the document's security scheme names it: ignored_auth strips the credential by that name
// (case-sensitively) to check that the server refuses the request without it.
const AUTH_HEADER = { Authorization: `Bearer ${MANAGEMENT_KEY}` };

let stack: TestStack;
let baseUrl: string;
let scratch: string;
const thrown = new Map<string, string>();

beforeAll(async () => {
  // Rate limiting off: every generated request must reach the handlers. A worker, so runs exist and finish.
  // AUTH_FAILURE_LIMIT off too: generated junk (wrong keys, unsigned webhooks) would otherwise get this address refused.
  stack = await startStack({ env: { API_KEYS: MANAGEMENT_KEY, RATE_LIMIT_MAX: '0', AUTH_FAILURE_LIMIT: '0' } });
  // The server's side of a failure: what was thrown, by request id (5xx answers quote it).
  stack.api.server.addHook('onError', async (request, _reply, error) => {
    thrown.set(request.id, error.stack ?? String(error));
  });
  await stack.api.server.listen({ host: '127.0.0.1', port: 0 });
  baseUrl = `http://127.0.0.1:${(stack.api.server.server.address() as AddressInfo).port}`;
  scratch = await mkdtemp(join(tmpdir(), 'activity-core-fuzz-'));
});
afterAll(async () => {
  await stack?.close();
});

describe('API fuzzing', () => {
  test(
    'every documented operation answers generated valid and invalid requests as its document says, without a 5xx or a slow answer, over at least 1,000 requests',
    async () => {
      const cli = findSchemathesis();
      if (cli === undefined)
        throw new Error(
          'schemathesis not found: run `npm test` (it installs it into .tools/venv) or set SCHEMATHESIS_PATH',
        );
      const served = await fetch(`${baseUrl}/openapi.json`);
      expect(served.status).toBe(200);
      const documented = documentedOperations((await served.json()) as Parameters<typeof documentedOperations>[0]);
      const operations = documented.map((operation) => operation.name);
      expect(operations.length).toBeGreaterThanOrEqual(20);
      const seeded = await seedResources(stack.api.server, AUTH_HEADER);
      if (seeded.skipped.length > 0)
        console.warn(`[fuzz] seeding steps refused (fuzzing without those resources):\n${seeded.skipped.join('\n')}`);
      const config = join(scratch, 'schemathesis.toml');
      await writeFile(config, schemathesisConfig(documented, seeded));

      const { result, report, seconds } = await fuzz({
        cli,
        schemaUrl: `${baseUrl}/openapi.json`,
        workDir: scratch,
        headers: AUTH_HEADER,
        configFile: config,
        seed: SEED,
        maxExamples: MAX_EXAMPLES,
        maxResponseSeconds: MAX_RESPONSE_SECONDS,
        requestTimeoutSeconds: MAX_RESPONSE_SECONDS * 3,
        phases: ['examples', 'coverage', 'fuzzing'],
        timeoutMs: RUN_TIMEOUT_MS,
        checks: CONFORMANCE_CHECKS,
      });

      const perOperation = new Map(operations.map((operation) => [operation, 0]));
      const statuses = new Map<string, number>();
      for (const interaction of report.interactions) {
        perOperation.set(interaction.operation, (perOperation.get(interaction.operation) ?? 0) + 1);
        const key = interaction.status === undefined ? 'none' : `${String(interaction.status).slice(0, 1)}xx`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
      }
      // A request fails on a check that failed and no rule the document states in words explains, or on no answer at all.
      const failed = report.failures.filter(
        (failure) => failure.status === undefined || unexplainedFailures(failure).length > 0,
      );
      const explained = report.failures.filter((failure) => !failed.includes(failure));
      const findings = findingsOf(report.interactions);
      const rules = new Set(
        explained.flatMap((failure) => unstatedRulesBehind(failure) ?? []).map((rule) => rule.rule),
      );
      console.info(
        `[fuzz] seed ${SEED}: ${report.interactions.length} requests over ${operations.length} operations in ${seconds.toFixed(1)} s; ` +
          `${[...statuses].map(([status, count]) => `${status} ${count}`).join(', ')}; ${failed.length} failed (${findings.length} distinct findings); ` +
          `${explained.length} schema-valid requests refused by rules the document states in words (${[...rules].join('; ') || 'none'})`,
      );

      const summary = [
        ...report.errors.map((error) => `schemathesis error — ${error}`),
        ...(findings.length > 0 ? [`distinct findings:\n  ${findings.join('\n  ')}`] : []),
        ...failed
          .slice(0, 25)
          .map((failure) => describeFailure({ ...failure, checks: unexplainedFailures(failure) }, thrown)),
        ...(failed.length > 25 ? [`… and ${failed.length - 25} more failing requests`] : []),
      ].join('\n\n');
      const context = `seed ${SEED} (FUZZ_SEED=${SEED} reproduces it); reports kept in ${join(scratch, 'reports')}`;
      expect(failed.length, `${failed.length} requests failed — ${context}\n\n${summary}\n`).toBe(0);
      expect(report.errors.length, `schemathesis could not test everything — ${context}\n\n${summary}\n`).toBe(0);
      // Once failures and errors are ruled out: exit status 0, or 1 for the explained refusals only (schemathesis
      // counts them as failures); anything else is a problem the report does not show.
      expect(
        result.code,
        `schemathesis exited ${String(result.code)} — ${context}\n${result.output.slice(-4000)}`,
      ).toBe(explained.length > 0 ? 1 : 0);
      expect(report.interactions.length).toBeGreaterThanOrEqual(MIN_REQUESTS);
      const untested = [...perOperation]
        .filter(([, count]) => count < 5)
        .map(([operation, count]) => `${operation} (${count})`);
      expect(untested, 'operations that got almost no requests').toEqual([]);

      await rm(scratch, { recursive: true, force: true });
    },
    RUN_TIMEOUT_MS + 30_000,
  );
});

describe('the fuzz harness', () => {
  test('reports a 5xx answer, an answer over the time limit and a request that never gets one as failures, naming each operation', async () => {
    const cli = findSchemathesis();
    if (cli === undefined)
      throw new Error(
        'schemathesis not found: run `npm test` (it installs it into .tools/venv) or set SCHEMATHESIS_PATH',
      );
    const operation = { responses: { 200: { description: 'ok' } } };
    const document = {
      openapi: '3.1.0',
      info: { title: 'harness check', version: '1' },
      paths: {
        '/fine': { get: operation },
        '/boom': { get: operation },
        '/slow': { get: operation },
        '/hang': { get: operation },
      },
    };
    const server = createServer((request, response) => {
      const answer = (status: number, body: object): void =>
        void response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (request.url === '/openapi.json') answer(200, document);
      else if (request.url === '/boom') answer(500, { request_id: 'boom-1' });
      else if (request.url === '/slow') setTimeout(() => answer(200, {}), 1_500);
      else if (request.url === '/hang')
        return; // never answers
      else answer(200, {});
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const workDir = await mkdtemp(join(tmpdir(), 'activity-core-fuzz-check-'));
    try {
      const { report } = await fuzz({
        cli,
        schemaUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/openapi.json`,
        workDir,
        seed: SEED,
        maxExamples: 1,
        maxResponseSeconds: 0.5,
        requestTimeoutSeconds: 3,
        phases: ['fuzzing'],
        timeoutMs: 120_000,
      });
      const failed = new Map(report.failures.map((failure) => [failure.operation, failure]));
      expect([...failed.keys()].sort()).toEqual(['GET /boom', 'GET /hang', 'GET /slow']);
      expect(failed.get('GET /boom')?.status).toBe(500);
      expect(describeFailure(failed.get('GET /boom')!, new Map([['boom-1', 'Error: kaboom\n    at handler']]))).toMatch(
        /^GET \/boom: HTTP 500[\s\S]*request: +GET http:[^\n]*\/boom[\s\S]*thrown: +Error: kaboom/,
      );
      expect(describeFailure(failed.get('GET /slow')!)).toMatch(
        /^GET \/slow: HTTP 200 after 1\.\d+ s — max_response_time/,
      );
      expect(describeFailure(failed.get('GET /hang')!)).toMatch(/^GET \/hang: no response/);
      expect(
        report.interactions.some((interaction) => interaction.operation === 'GET /fine' && interaction.status === 200),
      ).toBe(true);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await rm(workDir, { recursive: true, force: true });
    }
  });
});
