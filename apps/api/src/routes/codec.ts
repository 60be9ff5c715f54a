import { CodecHeaders, CodecPayloads, InvalidInputError, Problem } from '@activity-core/contracts';
import { payloadFromJson, payloadToJson, type JsonPayload, type PayloadCodec } from '@activity-core/temporal/client';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';

export interface CodecRouteOptions {
  codec: PayloadCodec;
  /** Browser origins (the Temporal UI's) allowed to call the endpoint. */
  allowedOrigins: readonly string[];
}

/**
 * Temporal's remote codec endpoint, so the Temporal UI and CLI can show the
 * payloads that the encryption codec keeps as ciphertext in Temporal:
 * `POST /codec/decode` and `POST /codec/encode`. Management keys only (the
 * CLI sends one with `--codec-auth`; the UI with "pass access token"); CORS
 * for the configured UI origins, credentials included.
 */
export const codecRoutes =
  (options: CodecRouteOptions): FastifyPluginAsyncZod =>
  async (app) => {
    const allowed = new Set(options.allowedOrigins);
    const cors = (request: FastifyRequest, reply: FastifyReply): void => {
      const origin = request.headers.origin;
      if (origin === undefined || !allowed.has(origin)) return;
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-allow-credentials', 'true');
      reply.header('vary', 'Origin');
    };
    // Answers, errors included, carry the CORS headers, so the UI can show a 401 instead of a CORS failure.
    app.addHook('onSend', async (request, reply, payload) => {
      cors(request, reply);
      return payload;
    });

    app.options('/codec/:operation', { config: { auth: 'public' }, schema: { hide: true } }, async (request, reply) => {
      cors(request, reply);
      reply.header('access-control-allow-methods', 'POST, OPTIONS');
      reply.header('access-control-allow-headers', 'Content-Type, X-Namespace, Authorization');
      reply.header('access-control-max-age', '600');
      return reply.status(204).send();
    });

    for (const operation of ['decode', 'encode'] as const) {
      app.post(
        `/codec/${operation}`,
        {
          config: { auth: 'management', role: 'operate' },
          schema: {
            tags: ['codec'],
            summary:
              operation === 'decode'
                ? 'Decrypt payloads for the Temporal UI and CLI'
                : 'Encrypt payloads for the Temporal UI and CLI',
            description:
              "Temporal's remote codec protocol. Configure the UI's codec endpoint as `<api>/codec`. Payloads that are not encrypted are returned unchanged by decode.",
            headers: CodecHeaders,
            body: CodecPayloads,
            response: { 200: CodecPayloads, 400: Problem, 401: Problem, 413: Problem, 429: Problem },
          },
        },
        async (request) => {
          const results: JsonPayload[] = [];
          const { payloads } = request.body;
          for (const [index, json] of payloads.entries()) {
            try {
              const [result] = await options.codec[operation]([payloadFromJson(json)]);
              results.push(payloadToJson(result!));
            } catch (error) {
              throw new InvalidInputError(`payload ${index} could not be ${operation}d: ${(error as Error).message}`, [
                {
                  path: `payloads[${index}]`,
                  message:
                    operation === 'decode'
                      ? 'not a payload this service sealed, or sealed with a key it does not have'
                      : 'could not be encrypted',
                },
              ]);
            }
          }
          return { payloads: results };
        },
      );
    }
  };
