import {
  ConflictError,
  EventEnvelope,
  InvalidInputError,
  NotFoundError,
  reservedEventIdReason,
  type EventAcceptedResponse,
  type FieldIssue,
} from '@activity-core/contracts';
import type { WebhookSourceRow, WebhookSourcesRepository } from '@activity-core/db';
import type { EventIngest, Logger } from '@activity-core/router';
import {
  extractEvent,
  isSealedSecret,
  verifyWebhook,
  WebhookSourceConfig,
  type SealedSecret,
  type SecretBox,
  type WebhookHeaders,
} from '@activity-core/webhooks';
import { formatPath } from '../plugins/problem';
import { assignEventId } from './event-service';

/** `Omit` applied to each member of a union, so the scheme still discriminates. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A webhook source as the API shows it: everything but the secret. */
export type WebhookSourceView = DistributiveOmit<WebhookSourceConfig, 'secret'> & {
  /** The last four characters of the secret, for telling secrets apart; null for secrets under 16 characters. */
  secret_hint: string | null;
  /** True when the secret is stored encrypted (WEBHOOK_SECRET_KEYS is set). */
  secret_encrypted: boolean;
  created_at: string;
  updated_at: string;
};

/**
 * The source config as stored: complete (defaults applied when it was
 * written), the secret sealed when a secret box is configured, and the hint
 * kept beside it so showing a source never needs the secret.
 */
type StoredConfig = DistributiveOmit<WebhookSourceConfig, 'secret'> & { secret: string | SealedSecret; secret_hint: string | null };

/** Associated data for sealing: a sealed secret opens only on the row of the source it was sealed for. */
const sealContext = (name: string): string => `activity-core:webhook-source:${name}`;

/** Shortest secret whose last four characters are shown. */
const HINT_MIN_LENGTH = 16;

export function createWebhookService(deps: {
  sources: WebhookSourcesRepository;
  ingest: Pick<EventIngest, 'ingest'>;
  logger: Logger;
  /** Encrypts secrets at rest; without one they are stored as given. */
  secretBox?: SecretBox;
}) {
  function seal(config: WebhookSourceConfig): StoredConfig {
    const secret_hint = config.secret.length >= HINT_MIN_LENGTH ? config.secret.slice(-4) : null;
    const secret = deps.secretBox === undefined ? config.secret : deps.secretBox.seal(config.secret, sealContext(config.name));
    return { ...config, secret, secret_hint };
  }

  /** The usable config of a stored source: secret opened, defaults applied. */
  function open(row: WebhookSourceRow): WebhookSourceConfig {
    const { secret_hint: _hint, ...stored } = row.config as StoredConfig;
    let secret: string;
    if (isSealedSecret(stored.secret)) {
      if (deps.secretBox === undefined) {
        throw new Error(`webhook source ${row.name} has an encrypted secret but WEBHOOK_SECRET_KEYS is not set`);
      }
      secret = deps.secretBox.open(stored.secret, sealContext(row.name));
    } else {
      secret = stored.secret;
    }
    return WebhookSourceConfig.parse({ ...stored, secret, name: row.name });
  }

  /** Shown without opening the secret, so a source stays readable even if its key is gone. */
  function view(row: WebhookSourceRow): WebhookSourceView {
    const { secret, secret_hint, ...rest } = row.config as StoredConfig;
    return {
      ...(rest as DistributiveOmit<WebhookSourceConfig, 'secret'>),
      name: row.name,
      secret_hint,
      secret_encrypted: isSealedSecret(secret),
      created_at: row.createdAt.toISOString(),
      updated_at: row.updatedAt.toISOString(),
    };
  }

  async function requireRow(name: string): Promise<WebhookSourceRow> {
    const row = await deps.sources.get(name);
    if (row === undefined) throw new NotFoundError('webhook source', name);
    return row;
  }

  return {
    async list(): Promise<WebhookSourceView[]> {
      return (await deps.sources.list()).map(view);
    },

    async get(name: string): Promise<WebhookSourceView> {
      return view(await requireRow(name));
    },

    /** Creates a source; a taken name is a conflict (use PUT to replace). */
    async create(config: WebhookSourceConfig): Promise<WebhookSourceView> {
      const row = await deps.sources.insert(config.name, config.scheme, seal(config));
      if (row === undefined) {
        throw new ConflictError(`a webhook source named ${config.name} already exists; PUT /v1/webhook-sources/${config.name} replaces it`);
      }
      return view(row);
    },

    /** Creates or replaces a source. Replacing is how a secret is rotated. */
    async put(config: WebhookSourceConfig): Promise<{ view: WebhookSourceView; created: boolean }> {
      const { row, created } = await deps.sources.upsert(config.name, config.scheme, seal(config));
      return { view: view(row), created };
    },

    async remove(name: string): Promise<void> {
      if (!(await deps.sources.delete(name))) throw new NotFoundError('webhook source', name);
    },

    /**
     * One delivery to `POST /v1/webhooks/{name}`: verify the signature on the
     * raw bytes, read the event out of it, then the same durable ingest as
     * `POST /v1/events`. Nothing is stored unless the signature verifies.
     *
     * @throws {WebhookVerificationError} bad or missing signature (401)
     * @throws {WebhookPayloadError} authentic but unusable content (400)
     */
    async receive(name: string, headers: WebhookHeaders, rawBody: Buffer, receivedAt: Date): Promise<EventAcceptedResponse> {
      const config = open(await requireRow(name));
      verifyWebhook(config, headers, rawBody, receivedAt);
      const extracted = extractEvent(config, headers, rawBody, receivedAt);
      const assigned = extracted.envelope.event_id === undefined;
      const parsed = EventEnvelope.safeParse({ ...extracted.envelope, event_id: extracted.envelope.event_id ?? assignEventId() });
      if (!parsed.success) {
        const issues: FieldIssue[] = parsed.error.issues.map((issue) => ({ path: formatPath(issue.path), message: issue.message, code: issue.code }));
        throw new InvalidInputError('the delivery does not make a valid event', issues);
      }
      const reserved = reservedEventIdReason(parsed.data.event_id);
      if (reserved !== undefined) {
        throw new InvalidInputError(`event id ${parsed.data.event_id} is reserved`, [{ path: 'event_id', message: reserved }]);
      }
      deps.logger.debug({ source: name, eventId: parsed.data.event_id }, 'webhook delivery verified');
      return await deps.ingest.ingest(parsed.data, assigned ? 'assigned' : extracted.idOrigin);
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
