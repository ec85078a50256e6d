import type Database from 'better-sqlite3';

const caches = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/**
 * The database's prepared statement for `sql`, prepared once. Queries are built from a few
 * filter combinations, so the cache stays small; preparing anew on every request cost more
 * than running the query (bench scenario 1, GET /messages).
 */
export function prepared(db: Database.Database, sql: string): Database.Statement {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let statement = cache.get(sql);
  if (!statement) cache.set(sql, (statement = db.prepare(sql)));
  return statement;
}
