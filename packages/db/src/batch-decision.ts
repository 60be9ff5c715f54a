/**
 * What adding one event to its key's batch does (docs/coalescing.md,
 * "Batching", ADR 0070). Pure: the repository (coalesce-windows-repository.ts
 * `joinBatch`) applies it under the open batch's row lock, in the transaction
 * that adds the event.
 */

/** A batch's bounds as the definition states them. */
export interface BatchBounds {
  /** Most events in one batch (1..1000). */
  maxSize: number;
  /** Most bytes of member envelopes (their JSON) in one batch. */
  maxBytes: number;
}

/** The open batch of the event's key, as its row says: members and their bytes so far. */
export interface OpenBatch {
  count: number;
  bytes: number;
}

/**
 * - `closeOpen`: the open batch closes first, without this event (`max_bytes`:
 *   the event would take it past the cap), and the event opens the next one;
 * - `into`: `open` (the event joins the open batch) or `new` (it opens one);
 * - `position`: the event's 1-based place in the batch it joins;
 * - `closeAfter`: the batch the event joined closes with it, in the same
 *   transaction (`max_size`: it is full; `max_bytes`: it holds the cap, or a
 *   lone event alone passes it), and its run is started at once.
 */
export interface BatchJoinDecision {
  closeOpen: boolean;
  into: 'open' | 'new';
  position: number;
  closeAfter: 'max_size' | 'max_bytes' | undefined;
}

export function decideBatchJoin(
  open: OpenBatch | undefined,
  eventBytes: number,
  bounds: BatchBounds,
): BatchJoinDecision {
  const closeOpen = open !== undefined && open.bytes + eventBytes > bounds.maxBytes;
  const joined = open !== undefined && !closeOpen ? open : undefined;
  const position = (joined?.count ?? 0) + 1;
  const bytes = (joined?.bytes ?? 0) + eventBytes;
  // `>=`: a max_size lowered while a batch was open closes it with its next event.
  const closeAfter = position >= bounds.maxSize ? 'max_size' : bytes >= bounds.maxBytes ? 'max_bytes' : undefined;
  return { closeOpen, into: joined === undefined ? 'new' : 'open', position, closeAfter };
}
