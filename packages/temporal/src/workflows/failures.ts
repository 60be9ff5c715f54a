import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure, TemporalFailure } from '@temporalio/workflow';

export interface FailureInfo {
  message: string;
  type?: string;
  [key: string]: unknown;
}

/** The innermost useful message and type of a failure chain, for records and the API. */
export function describeFailure(error: unknown): FailureInfo {
  let current: unknown = error;
  while (
    (current instanceof ActivityFailure || current instanceof ChildWorkflowFailure) &&
    current.cause !== undefined
  ) {
    current = current.cause;
  }
  if (current instanceof ApplicationFailure) {
    return { message: current.message, ...(current.type == null ? {} : { type: current.type }) };
  }
  if (current instanceof TemporalFailure) return { message: current.message, type: current.name };
  if (current instanceof Error) return { message: current.message, type: current.name };
  return { message: String(current) };
}
