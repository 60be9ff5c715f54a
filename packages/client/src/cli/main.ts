#!/usr/bin/env tsx
/**
 * The `activity-core` command: `npx activity-core --help` in the repository
 * (the workspace's bin), or `npx tsx packages/client/src/cli/main.ts`.
 */
import { runCli } from './run';

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
});
