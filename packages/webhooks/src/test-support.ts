import { WebhookPayloadError, WebhookVerificationError } from './errors';

/** Runs `action` and returns the error it must throw, failing the test on any other outcome. */
export function thrown<E extends Error>(errorClass: new (...args: never[]) => E, action: () => unknown): E {
  try {
    action();
  } catch (error) {
    if (error instanceof errorClass) return error;
    throw error;
  }
  throw new Error(`expected a ${errorClass.name}, but nothing was thrown`);
}

export const verificationError = (action: () => unknown): WebhookVerificationError =>
  thrown(WebhookVerificationError, action);
export const payloadError = (action: () => unknown): WebhookPayloadError => thrown(WebhookPayloadError, action);
