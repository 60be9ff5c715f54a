import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { describe, expect, test } from 'vitest';
import { healthRoutes, type ReadinessProbe } from './health';

/** A probe that counts its checks and answers when told to. */
function countingProbe(name: string) {
  let calls = 0;
  let fail = false;
  const pending: Array<() => void> = [];
  const probe: ReadinessProbe = {
    name,
    check: () => {
      calls += 1;
      return new Promise<void>((resolve, reject) => pending.push(() => (fail ? reject(new Error('down')) : resolve())));
    },
  };
  return {
    probe,
    calls: () => calls,
    failFromNow: () => {
      fail = true;
    },
    answer: () => pending.splice(0).forEach((settle) => settle()),
  };
}

async function serverWith(probes: ReadinessProbe[], now: () => number) {
  const app = Fastify();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  await app.register(healthRoutes(probes, { cacheMs: 1_000, now }));
  return app;
}

describe('/readyz', () => {
  test('100 concurrent hits cause one check of each dependency, and all get its answer', async () => {
    const postgres = countingProbe('postgres');
    const temporal = countingProbe('temporal');
    const app = await serverWith([postgres.probe, temporal.probe], () => 0);
    const hits = Array.from({ length: 100 }, () => app.inject({ method: 'GET', url: '/readyz' }));
    await expect.poll(() => postgres.calls() + temporal.calls()).toBe(2);
    postgres.answer();
    temporal.answer();
    const answers = await Promise.all(hits);
    expect(new Set(answers.map((answer) => answer.statusCode))).toEqual(new Set([200]));
    expect(postgres.calls()).toBe(1);
    expect(temporal.calls()).toBe(1);
    await app.close();
  });

  test('the answer is reused for a second after the check ends, then checked again', async () => {
    let clock = 0;
    const postgres = countingProbe('postgres');
    const app = await serverWith([postgres.probe], () => clock);
    const first = app.inject({ method: 'GET', url: '/readyz' });
    await expect.poll(() => postgres.calls()).toBe(1);
    postgres.answer();
    expect((await first).statusCode).toBe(200);

    clock = 999;
    postgres.failFromNow();
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    expect(postgres.calls()).toBe(1);

    clock = 1_000;
    const later = app.inject({ method: 'GET', url: '/readyz' });
    await expect.poll(() => postgres.calls()).toBe(2);
    postgres.answer();
    const answer = await later;
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toEqual({
      status: 'not_ready',
      checks: { postgres: { status: 'failing', reason: 'error' } },
    });
    await app.close();
  });
});
