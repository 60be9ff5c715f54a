/**
 * JSON with object keys sorted at every depth: the same content always gives
 * the same text, whatever order a client (or Postgres jsonb) put keys in.
 *
 * Iterative (an explicit stack, not recursion), so no nesting depth can
 * overflow the call stack.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  // Work items, last first: literal text to emit, or a value to write.
  const stack: Array<string | { value: unknown }> = [{ value }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    const current = item.value;
    if (current === null || typeof current !== 'object') {
      out.push(JSON.stringify(current) ?? 'null');
    } else if (Array.isArray(current)) {
      stack.push(']');
      for (let i = current.length - 1; i >= 0; i--) {
        const entry: unknown = current[i];
        stack.push({ value: entry === undefined ? null : entry });
        if (i > 0) stack.push(',');
      }
      stack.push('[');
    } else {
      const entries = Object.entries(current as Record<string, unknown>)
        .filter(([, entry]) => entry !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      stack.push('}');
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, entry] = entries[i]!;
        stack.push({ value: entry });
        stack.push(`${JSON.stringify(key)}:`);
        if (i > 0) stack.push(',');
      }
      stack.push('{');
    }
  }
  return out.join('');
}
