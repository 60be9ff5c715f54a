import {
  assignedEventId,
  ConflictError,
  EventEnvelope,
  formatCredentialLabel,
  InvalidInputError,
  NotFoundError,
  reservedEventIdReason,
  UnavailableError,
  WEBHOOK_EVENT_ID_PREFIX,
  webhookDeliveryIdOf,
  type EventAcceptedResponse,
  type EventIdOrigin,
  type FieldIssue,
  type Logger,
} from '@activity-core/contracts';
import type { EventsRepository, WebhookSourceRow, WebhookSourcesRepository } from '@activity-core/db';
import type { EventIngest } from '@activity-core/router';
import {
  extractEvent,
  isSealedSecret,
  registrationIssues,
  SecretBoxError,
  storedSourceWarnings,
  unverifiedDelivery,
  verifyDelivery,
  WebhookSourceConfig,
  WebhookVerificationError,
  type SealedSecret,
  type SecretBox,
  type WebhookHeaders,
} from '@activity-core/webhooks';
import type { WebhookLimits } from '../plugins/rate-limit';
import { formatPath } from '../plugins/problem';
import { createWebhookSourceCatalog, type WebhookSourceCatalog } from './webhook-source-catalog';
import { eventOutcomeOf, senderAnswer, type EventOutcome } from './event-service';

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
type StoredConfig = DistributiveOmit<WebhookSourceConfig, 'secret'> & {
  secret: string | SealedSecret;
  secret_hint: string | null;
};

/** Associated data for sealing: a sealed secret opens only on the row of the source it was sealed for. */
const sealContext = (name: string): string => `activity-core:webhook-source:${name}`;

/** Shortest secret whose last four characters are shown. */
const HINT_MIN_LENGTH = 16;

/**
 * How long a claim on signed bytes may stay without its event before another
 * delivery of the same bytes takes it over: longer than any ingest takes, so
 * only a claim whose request died (crash, lost connection) is taken over.
 */
const ABANDONED_CLAIM_MS = 10 * 60_000;

/** A stored plaintext secret while WEBHOOK_SECRET_KEYS is set: refused, never used. */
class PlaintextSecretError extends Error {}

export function createWebhookService(deps: {
  sources: WebhookSourcesRepository;
  /**
   * Where deliveries find their source: the sources cached per process and
   * re-read when their change counter moved. @default one built on `sources`
   */
  catalog?: WebhookSourceCatalog;
  /** Looks up the event an earlier delivery of the same signed bytes became. */
  events: Pick<EventsRepository, 'get'>;
  ingest: Pick<EventIngest, 'ingest'>;
  logger: Logger;
  /** Encrypts secrets at rest; without one they are stored as given. */
  secretBox?: SecretBox;
  /** Per-source and per-address limits on deliveries; without them nothing is limited. */
  limits?: WebhookLimits;
}) {
  function seal(config: WebhookSourceConfig): StoredConfig {
    const secret_hint = config.secret.length >= HINT_MIN_LENGTH ? config.secret.slice(-4) : null;
    const secret =
      deps.secretBox === undefined ? config.secret : deps.secretBox.seal(config.secret, sealContext(config.name));
    return { ...config, secret, secret_hint };
  }

  const catalog = deps.catalog ?? createWebhookSourceCatalog(deps.sources);
  /**
   * Opened configs by stored row: a row object lives until the catalog reloads (a source changed), so a
   * secret is opened and its config parsed once per change, not once per delivery. Failures are not kept.
   */
  const opened = new WeakMap<WebhookSourceRow, WebhookSourceConfig>();

  /** The usable config of a stored source: secret opened, defaults applied. */
  function open(row: WebhookSourceRow): WebhookSourceConfig {
    const known = opened.get(row);
    if (known !== undefined) return known;
    const config = openStored(row);
    opened.set(row, config);
    return config;
  }

  function openStored(row: WebhookSourceRow): WebhookSourceConfig {
    const { secret_hint: _hint, ...stored } = row.config as StoredConfig;
    let secret: string;
    if (isSealedSecret(stored.secret)) {
      if (deps.secretBox === undefined) {
        throw new SecretBoxError(
          `the secret was sealed with key ${stored.secret.kid}, but WEBHOOK_SECRET_KEYS is not set`,
        );
      }
      secret = deps.secretBox.open(stored.secret, sealContext(row.name));
    } else if (deps.secretBox !== undefined) {
      // Start-up seals every plaintext secret; one seen now was written by a process without the keys.
      throw new PlaintextSecretError(
        `webhook source ${row.name} has a plaintext secret although WEBHOOK_SECRET_KEYS is set`,
      );
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

  /** Refuses a config that is valid in shape but unsafe to register (see registrationIssues). */
  function assertRegistrable(config: WebhookSourceConfig): void {
    const issues = registrationIssues(config);
    if (issues.length > 0) {
      throw new InvalidInputError(issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '), issues);
    }
  }

  /** `duplicate`, pointing at the event an earlier delivery of the same signed bytes became; starts nothing. */
  async function duplicateOf(eventId: string): Promise<EventAcceptedResponse | undefined> {
    const found = await deps.events.get(eventId);
    if (found === undefined) return undefined;
    return {
      event_id: found.event.eventId,
      event_id_assigned: found.event.idOrigin === 'assigned',
      status: 'duplicate',
    };
  }

  /**
   * Deliveries accepted before event ids were namespaced were stored under the
   * bare delivery id. A redelivery of one of those is its duplicate, not a new
   * event. Only events that cannot have been posted over POST /v1/events
   * qualify: a delivery id taken from a header (`id_origin: delivery_id`, which
   * only webhooks produce), from this source, recorded before credentials were
   * (`credential` null) — so no key can use this to swallow a delivery.
   */
  async function legacyDuplicate(name: string, envelope: EventEnvelope): Promise<EventAcceptedResponse | undefined> {
    const bare = webhookDeliveryIdOf(name, envelope.event_id);
    if (bare === undefined) return undefined;
    const found = await deps.events.get(bare);
    if (found === undefined) return undefined;
    const { event } = found;
    if (event.idOrigin !== 'delivery_id' || event.source !== envelope.source || event.credential !== null)
      return undefined;
    return { event_id: event.eventId, event_id_assigned: false, status: 'duplicate' };
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
      assertRegistrable(config);
      const row = await deps.sources.insert(config.name, config.scheme, seal(config));
      if (row === undefined) {
        throw new ConflictError(
          `a webhook source named ${config.name} already exists; PUT /v1/webhook-sources/${config.name} replaces it`,
        );
      }
      return view(row);
    },

    /** Creates or replaces a source. Replacing is how a secret is rotated. */
    async put(config: WebhookSourceConfig): Promise<{ kind: 'created' | 'replaced'; view: WebhookSourceView }> {
      assertRegistrable(config);
      const { row, created } = await deps.sources.upsert(config.name, config.scheme, seal(config));
      return { kind: created ? 'created' : 'replaced', view: view(row) };
    },

    async remove(name: string): Promise<void> {
      if (!(await deps.sources.delete(name))) throw new NotFoundError('webhook source', name);
    },

    /**
     * Start-up: seals every plaintext secret when WEBHOOK_SECRET_KEYS is set
     * (a secret stored before the keys were configured, or by a process
     * without them), and warns about every stored source that would not pass
     * registration today (it keeps working). Returns what it did, for tests.
     */
    async prepareStoredSources(): Promise<{ sealed: string[]; warnings: string[] }> {
      const sealed: string[] = [];
      const warnings: string[] = [];
      for (const row of await deps.sources.list()) {
        const stored = row.config as StoredConfig;
        if (deps.secretBox !== undefined && !isSealedSecret(stored.secret)) {
          const resealed = { ...stored, secret: deps.secretBox.seal(stored.secret, sealContext(row.name)) };
          // Only if unchanged since read: a concurrent PUT wins.
          if (await deps.sources.replaceConfigIf(row.name, row.config, resealed)) {
            sealed.push(row.name);
            deps.logger.warn(
              { source: row.name },
              'webhook source had a plaintext secret; sealed it with WEBHOOK_SECRET_KEYS',
            );
          }
        }
        let config: WebhookSourceConfig;
        try {
          config = WebhookSourceConfig.parse({
            ...stored,
            secret: isSealedSecret(stored.secret) ? 'x'.repeat(64) : stored.secret,
            name: row.name,
          });
        } catch (error) {
          deps.logger.warn(
            { source: row.name, err: error },
            'stored webhook source config does not parse; its deliveries will fail',
          );
          continue;
        }
        // The secret's length can only be checked where it is readable.
        const issues = storedSourceWarnings(config).filter(
          (issue) => !(isSealedSecret(stored.secret) && issue.startsWith('secret:')),
        );
        for (const issue of issues) {
          warnings.push(`${row.name}: ${issue}`);
          deps.logger.warn(
            { source: row.name, issue },
            'stored webhook source would be refused at registration today; it keeps working until it is replaced',
          );
        }
      }
      return { sealed, warnings };
    },

    /**
     * One delivery to `POST /v1/webhooks/{name}`: verify the signature on the
     * raw bytes, read the event out of it, then the same durable ingest as
     * `POST /v1/events`. Nothing is stored unless the signature verifies.
     *
     * Deduplicated twice: by event id (`wh:{name}:{delivery id}`), and by the
     * SHA-256 of the signed bytes, so a captured delivery re-sent under a new
     * delivery id (or another unsigned event type) answers `duplicate`,
     * pointing at the event the first one became, and starts nothing.
     *
     * Limits: a delivery that verifies is never refused for its address. One
     * that does not verify, and a verified repeat of bytes already accepted,
     * count against the client address; new deliveries spend the source's budget.
     *
     * @param clientAddress the caller's address (request.ip), for the failure limit.
     * @throws {WebhookVerificationError} no such source, or bad or missing signature: one answer for both (401)
     * @throws {WebhookPayloadError} authentic but unusable content (400)
     * @throws {RateLimitedError} a failing delivery from an address that failed too often, or a new delivery over the source's budget (429)
     */
    async receive(
      name: string,
      headers: WebhookHeaders,
      rawBody: Buffer,
      receivedAt: Date,
      clientAddress = 'unknown',
    ): Promise<EventOutcome> {
      const row = await catalog.get(name);
      let config: WebhookSourceConfig | undefined;
      let signedSha256: string;
      try {
        if (row !== undefined) {
          try {
            config = open(row);
          } catch (error) {
            if (error instanceof PlaintextSecretError) {
              deps.logger.error(
                { source: name },
                `${error.message}: refusing its deliveries; restart the API to seal it`,
              );
              throw new UnavailableError('this source cannot verify deliveries right now; retry later', 60);
            }
            if (!(error instanceof SecretBoxError)) throw error;
            // Answered like a bad signature (as if the source did not exist): the sender learns nothing; the operator reads why.
            const sealed = (row.config as StoredConfig).secret;
            deps.logger.error(
              { source: name, keyId: isSealedSecret(sealed) ? sealed.kid : undefined, reason: error.message },
              'webhook source secret cannot be opened with WEBHOOK_SECRET_KEYS (is the key that sealed it still configured?): refusing its deliveries as unverified',
            );
          }
        }
        // Unknown source or unopenable secret: one dummy HMAC over the body, the same work as verifying.
        ({ signedSha256 } = verifyDelivery(config, headers, rawBody, receivedAt));
      } catch (error) {
        if (!(error instanceof WebhookVerificationError)) throw error;
        // The reason is logged, never answered: the answer is the same for every refusal and for unknown sources.
        deps.logger.info(
          { source: name, code: error.code, reason: error.message, clientAddress },
          'webhook delivery refused',
        );
        deps.limits?.unverified(clientAddress);
        throw unverifiedDelivery();
      }
      // Verified, so config is set.
      const source = config as WebhookSourceConfig;

      const extracted = extractEvent(source, headers, rawBody, receivedAt);
      const assigned = extracted.envelope.event_id === undefined;
      const parsed = EventEnvelope.safeParse({
        ...extracted.envelope,
        event_id: extracted.envelope.event_id ?? assignedEventId(),
      });
      if (!parsed.success) {
        const issues: FieldIssue[] = parsed.error.issues.map((issue) => ({
          path: formatPath(issue.path),
          message: issue.message,
          code: issue.code,
        }));
        throw new InvalidInputError('the delivery does not make a valid event', issues);
      }
      const envelope = parsed.data;
      // Delivery ids are namespaced (wh:...) and never reserved; an assigned id is a UUID. Kept as a guard.
      const reserved = reservedEventIdReason(envelope.event_id);
      if (reserved !== undefined && !envelope.event_id.startsWith(WEBHOOK_EVENT_ID_PREFIX)) {
        throw new InvalidInputError(`event id ${envelope.event_id} is reserved`, [
          { path: 'event_id', message: reserved },
        ]);
      }
      const idOrigin: EventIdOrigin = assigned ? 'assigned' : extracted.idOrigin;

      const claim = await deps.sources.claimDelivery(name, signedSha256, envelope.event_id);
      if (!claim.claimed && claim.delivery.eventId !== envelope.event_id) {
        const original = await duplicateOf(claim.delivery.eventId);
        if (original !== undefined) {
          // A replay spends the address's allowance, never the source's budget: it does no new work.
          deps.limits?.repeated(clientAddress);
          deps.logger.warn(
            { source: name, eventId: envelope.event_id, originalEventId: original.event_id, clientAddress },
            'webhook delivery repeats the signed bytes of an earlier delivery under another id: answered as its duplicate',
          );
          return eventOutcomeOf(original);
        }
        // The earlier delivery's event is not stored: still being accepted, or its request died.
        const abandoned = await deps.sources.takeOverDelivery(
          name,
          signedSha256,
          claim.delivery.eventId,
          envelope.event_id,
          new Date(Date.now() - ABANDONED_CLAIM_MS),
        );
        if (!abandoned)
          throw new UnavailableError('a delivery with the same signed content is being accepted; retry later', 5);
      }
      if (claim.claimed && idOrigin === 'delivery_id') {
        const legacy = await legacyDuplicate(name, envelope);
        if (legacy !== undefined) {
          deps.limits?.repeated(clientAddress);
          // The bytes now point at the old event, so a replay under yet another id is its duplicate too.
          await deps.sources
            .takeOverDelivery(name, signedSha256, envelope.event_id, legacy.event_id, new Date(Date.now() + 60_000))
            .catch(() => undefined);
          return eventOutcomeOf(legacy);
        }
      }
      // The same bytes under the same id again: a retry, or a verbatim replay. Its cost is counted once its outcome is known.
      const repeat = !claim.claimed && claim.delivery.eventId === envelope.event_id;
      deps.logger.debug({ source: name, eventId: envelope.event_id }, 'webhook delivery verified');
      let response: EventAcceptedResponse;
      try {
        if (!repeat) deps.limits?.verified(name);
        response = await deps.ingest.ingest(envelope, idOrigin, {
          credential: formatCredentialLabel({ kind: 'webhook', source: name }),
        });
      } catch (error) {
        // Not accepted: free the bytes for a retry (which may carry a corrected id).
        if (claim.claimed || claim.delivery.eventId !== envelope.event_id) {
          await deps.sources.releaseDelivery(name, signedSha256, envelope.event_id).catch(() => undefined);
        }
        throw error;
      }
      if (repeat) {
        // An event that already existed is a replay's cost, the address's; one stored now (its first attempt died) is new work, the source's.
        if (response.status === 'duplicate') deps.limits?.repeated(clientAddress);
        else deps.limits?.spent(name);
      }
      // A webhook sender is told what became of its delivery, not which activities it reached.
      return eventOutcomeOf(senderAnswer(response));
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;
