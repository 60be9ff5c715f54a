/**
 * `npm run build`: the production build, into dist/.
 *
 *   dist/api/main.js                the API          (`npm run start:api`)
 *   dist/worker/main.js             the worker       (`npm run start:worker`)
 *   dist/worker/workflow-bundle.js  the workflow code, bundled once here; the worker loads it
 *                                   instead of bundling at start-up
 *   dist/db/migrate.js              the migrations   (`npm run start:migrate`)
 *   dist/migrations/                the SQL those three apply
 *
 * Each entry point is one ESM file for Node 20: the workspace packages
 * (@activity-core/*, TypeScript sources) are compiled into it, every other
 * package stays an import resolved from node_modules at run time, so a
 * production install (`npm ci --omit=dev`) plus dist/ is all that runs.
 * Needs the dev dependencies (esbuild, tsx); run it before omitting them.
 * `--out=<dir>` writes elsewhere (tests); the directory must lie inside the
 * project, so that Node finds node_modules and package.json's `"type": "module"`.
 */
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflows } from '@activity-core/temporal/worker';
import { build, type Plugin } from 'esbuild';

const root = process.cwd();

/** Bare imports stay imports, except our own workspace packages, which are compiled in. */
const externalDependencies: Plugin = {
  name: 'external-dependencies',
  setup(context) {
    context.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith('@activity-core/') ? undefined : { path: args.path, external: true },
    );
  },
};

/**
 * The compiled files resolve every dependency from the root node_modules. A version that npm had to
 * install inside one workspace (apps/x/node_modules) would silently be swapped for the root's.
 */
async function refuseWorkspaceLocalDependencies(): Promise<void> {
  const lock = JSON.parse(await readFile(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, unknown>;
  };
  const nested = Object.keys(lock.packages).filter((path) => /^(apps|packages)\/[^/]+\/node_modules\//.test(path));
  if (nested.length > 0) {
    throw new Error(
      `these dependencies are installed inside a workspace, which the bundled build cannot honour; align their versions with the root's: ${nested.join(', ')}`,
    );
  }
}

/**
 * Builds into `out`. The test suite builds once per run with the workflow
 * bundle its global setup has already made (`workflowBundleCode`), so the
 * spawned API and worker processes start from compiled JavaScript as
 * production does, instead of compiling the sources with tsx and bundling the
 * workflows again in every process.
 */
export async function buildProduction(out: string, options: { workflowBundleCode?: string } = {}): Promise<void> {
  await refuseWorkspaceLocalDependencies();
  await rm(out, { recursive: true, force: true });
  await build({
    entryPoints: {
      'api/main': 'apps/api/src/main.ts',
      'worker/main': 'apps/worker/src/main.ts',
      'db/migrate': 'packages/db/src/cli/migrate.ts',
    },
    outdir: out,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20.19',
    sourcemap: true,
    // Function and class names stay as written: logs, errors and Temporal's activity names use them.
    keepNames: true,
    plugins: [externalDependencies],
    logLevel: 'warning',
  });
  // packages/db resolves its migrations as `../migrations` from the module: from dist/<app>/ that is dist/migrations.
  await cp(join(root, 'packages/db/migrations'), join(out, 'migrations'), { recursive: true });
  const code = options.workflowBundleCode ?? (await bundleWorkflows()).code;
  await mkdir(join(out, 'worker'), { recursive: true });
  await writeFile(join(out, 'worker', 'workflow-bundle.js'), code);
}

async function main(): Promise<void> {
  const started = Date.now();
  const outArg = process.argv.slice(2).find((arg) => arg.startsWith('--out='));
  const out = outArg === undefined ? join(root, 'dist') : resolve(root, outArg.slice('--out='.length));
  await buildProduction(out);
  console.log(`built ${out} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

// Run as `npm run build`; imported (by the test suite's global setup) it only exports.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
