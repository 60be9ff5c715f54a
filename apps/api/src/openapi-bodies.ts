import type { SwaggerTransform } from '@fastify/swagger';
import type { FastifySchema } from 'fastify';

interface BodyByMediaType {
  content: Record<string, { schema: unknown }>;
}

function isBodyByMediaType(body: unknown): body is BodyByMediaType {
  return (
    typeof body === 'object' &&
    body !== null &&
    'content' in body &&
    typeof body.content === 'object' &&
    body.content !== null
  );
}

/**
 * A route may declare one body per media type, as fastify reads it
 * (`body: { content: { 'application/json': { schema }, … } }`); the zod
 * transform converts a single body schema only. This converts each media
 * type's zod schema with the same transform, so the OpenAPI document lists
 * every request content type with its own schema (POST /v1/events: JSON,
 * the CloudEvents structured and batch types).
 */
export function withBodiesByMediaType<S extends FastifySchema>(transform: SwaggerTransform<S>): SwaggerTransform<S> {
  return (document) => {
    const body: unknown = document.schema?.body;
    if (!isBodyByMediaType(body)) return transform(document);
    const base = transform({ ...document, schema: { ...document.schema, body: undefined } });
    const content: Record<string, { schema: unknown }> = {};
    for (const [mediaType, entry] of Object.entries(body.content)) {
      content[mediaType] = { schema: transform({ ...document, schema: { body: entry.schema } as S }).schema.body };
    }
    return { ...base, schema: { ...base.schema, body: { content } } };
  };
}
