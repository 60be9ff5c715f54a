/** Opaque keyset cursor over (created_at, id). */
export interface Cursor {
  createdAt: Date;
  id: string;
}

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAt.toISOString(), cursor.id])).toString('base64url');
}

/** Returns undefined for anything that is not a cursor this module produced. */
export function decodeCursor(value: string): Cursor | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed.length !== 2) return undefined;
    const [createdAt, id] = parsed as unknown[];
    if (typeof createdAt !== 'string' || typeof id !== 'string') return undefined;
    const date = new Date(createdAt);
    if (Number.isNaN(date.getTime())) return undefined;
    return { createdAt: date, id };
  } catch {
    return undefined;
  }
}
