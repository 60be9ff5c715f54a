import { createHash } from 'node:crypto';
import type { SQL } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { QueryResult, QueryResultRow } from 'pg';
import { findCode } from './errors';
import type * as schema from './schema';

/** The Drizzle database over activity-core's schema. */
export type Db = NodePgDatabase<typeof schema>;

/**
 * SQLSTATEs that say the server connection does not keep the session's named
 * statements: 26000 invalid_sql_statement_name (the statement is not there)
 * and 42P05 duplicate_prepared_statement (another client's is). A pooler in
 * transaction mode without prepared-statement support (PgBouncer before 1.21,
 * or with `max_prepared_statements = 0`) answers this way. Both come from
 * Parse or Bind, before anything was executed.
 */
const NOT_KEPT = new Set(['26000', '42P05']);

const notKept = (error: unknown): boolean => findCode(error, NOT_KEPT) !== undefined;

/**
 * A statement's name on the wire: its own name and a hash of its text. The
 * same name then always means the same text — across variants, processes
 * and versions of the code — so a connection that already holds a statement
 * under that name (a pooler's server connection, a rolling deploy) holds this
 * one, never another text with these values.
 */
function nameFor(name: string, text: string): string {
  return `ac_${name}_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
}

export interface StatementRunner {
  /**
   * A statement whose values are all `sql.placeholder(...)`s, for single
   * autocommit statements (never inside a transaction: a fallback re-runs
   * it). Its text is built once, here, and each call only binds the values.
   * While prepared statements are on it runs as a named prepared statement
   * (`name` and a hash of its text): each connection parses it once, and
   * Postgres plans it from its plan cache instead of for every call.
   */
  statement<T extends QueryResultRow>(
    name: string,
    query: SQL,
  ): (values: Record<string, unknown>) => Promise<QueryResult<T>>;
  /** False once a connection refused named statements (or when configured off): everything runs unnamed. */
  readonly prepared: boolean;
}

/**
 * Hot statements as named prepared statements. The accept of an event is a
 * large statement whose planning costs Postgres several times its execution;
 * named, it is planned once per connection and then from the plan cache.
 * Off (`prepared: false`) every statement is sent unnamed, as `db.execute`
 * does. If a connection refuses a named statement (a pooler that does not keep
 * them), the statement runs again unnamed, `onOff` is told once, and the
 * runner stays off for the life of the process.
 */
export function createStatementRunner(
  db: Db,
  options: { prepared: boolean; onOff?: (error: unknown) => void },
): StatementRunner {
  const dialect = new PgDialect();
  let prepared = options.prepared;

  function turnOff(error: unknown): void {
    if (!prepared) return;
    prepared = false;
    options.onOff?.(error);
  }

  return {
    get prepared() {
      return prepared;
    },
    statement<T extends QueryResultRow>(name: string, query: SQL) {
      const built = dialect.sqlToQuery(query);
      const named = db._.session.prepareQuery(built, undefined, nameFor(name, built.sql), false);
      const plain = db._.session.prepareQuery(built, undefined, undefined, false);
      return async (values: Record<string, unknown>): Promise<QueryResult<T>> => {
        if (!prepared) return (await plain.execute(values)) as QueryResult<T>;
        try {
          return (await named.execute(values)) as QueryResult<T>;
        } catch (error) {
          if (!notKept(error)) throw error;
          turnOff(error);
          return (await plain.execute(values)) as QueryResult<T>;
        }
      };
    },
  };
}
