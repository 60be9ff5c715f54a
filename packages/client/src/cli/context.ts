import type { ActivityCoreClient } from '../client';
import { ActivityCoreNetworkError, ActivityCoreProblem } from '../problem';
import { terminalSafe, type OutputStream, type Progress, type Style } from './output';

/** What every command gets: the client, where to print, and how. */
export interface CommandContext {
  client: ActivityCoreClient;
  baseUrl: string;
  cwd: string;
  out: OutputStream;
  err: OutputStream;
  /** Styles for stdout and stderr (each on only when that stream is a terminal). */
  style: Style;
  errStyle: Style;
  progress: Progress;
}

/** Thrown for a usage error found after parsing (a missing argument, a bad value). */
export class UsageError extends Error {}

/** One line (or a few) saying what went wrong, for any error a command lets through. */
export function describeError(error: unknown, baseUrl: string): string {
  if (error instanceof ActivityCoreProblem) {
    const lines = [`${error.status} ${error.title}${error.detail === undefined ? '' : `: ${error.detail}`}`];
    for (const issue of error.errors) lines.push(`  ${issue.path === '' ? '(request)' : issue.path}: ${issue.message}`);
    if (error.request_id !== undefined && error.status >= 500) lines.push(`  request id ${error.request_id}`);
    // Details and messages may quote what a sender sent.
    return lines.map(terminalSafe).join('\n');
  }
  if (error instanceof ActivityCoreNetworkError)
    return `cannot reach the API at ${baseUrl}: ${error.message} (set --url or ACTIVITY_CORE_URL)`;
  return error instanceof Error ? error.message : String(error);
}
