/**
 * Temporal's schedule listing, read so that one foreign entry cannot spoil it.
 *
 * A namespace may hold schedules of other deployments, some with a memo this
 * process cannot decode (another payload codec, or an encryption key it does
 * not have). The SDK's `client.schedule.list()` decodes every memo as it
 * pages and throws on the first it cannot open, losing the whole listing.
 * Here each entry's memo is decoded on its own: an entry whose memo does not
 * decode is yielded with no memo, and so is never taken for ours (ours carry
 * `managedBy` and the task queue in the memo) — neither trusted as in step
 * nor removed as an orphan.
 */
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';

/** What the sweep reads off one listing entry. */
export interface ListedSchedule {
  scheduleId: string;
  /** The decoded memo; `undefined` when it has none or it could not be decoded. */
  memo: Record<string, unknown> | undefined;
  state: { paused: boolean; note?: string | undefined };
}

interface ListingStats {
  /** Entries whose memo could not be decoded (somebody else's). */
  undecodable: number;
}

/**
 * Every schedule of the client's namespace, a page of `pageSize` at a time.
 * Listing failures (Temporal unreachable) throw; memo failures do not.
 */
export async function* listSchedules(
  client: Client,
  pageSize: number,
  stats: ListingStats = { undecodable: 0 },
): AsyncGenerator<ListedSchedule> {
  const { namespace, loadedDataConverter } = client.options;
  let nextPageToken: Uint8Array | undefined;
  for (;;) {
    const response = await client.workflowService.listSchedules({
      namespace,
      maximumPageSize: pageSize,
      nextPageToken,
    });
    for (const entry of response.schedules ?? []) {
      let memo: Record<string, unknown> | undefined;
      try {
        memo = await decodeMemo(loadedDataConverter, entry.memo?.fields);
      } catch {
        stats.undecodable++;
        memo = undefined;
      }
      yield {
        scheduleId: entry.scheduleId ?? '',
        memo,
        state: { paused: entry.info?.paused === true, note: entry.info?.notes ?? undefined },
      };
    }
    if (response.nextPageToken === null || response.nextPageToken === undefined || response.nextPageToken.length === 0)
      return;
    nextPageToken = response.nextPageToken;
  }
}

/** A memo's fields through the codecs (last first) and the payload converter, as the SDK decodes them. */
async function decodeMemo(
  converter: Client['options']['loadedDataConverter'],
  fields: Record<string, Payload> | null | undefined,
): Promise<Record<string, unknown> | undefined> {
  if (fields === null || fields === undefined) return undefined;
  const keys = Object.keys(fields);
  let payloads = keys.map((key) => fields[key]!);
  for (let index = converter.payloadCodecs.length - 1; index >= 0; index--)
    payloads = await converter.payloadCodecs[index]!.decode(payloads);
  const memo: Record<string, unknown> = {};
  for (const [index, key] of keys.entries()) memo[key] = converter.payloadConverter.fromPayload(payloads[index]!);
  return memo;
}
