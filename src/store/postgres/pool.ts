import pg from 'pg';
import { Errors, OrganismError } from '../../errors/catalogue.js';
import { isConnectionFailure } from './reachability.js';

/** int8 (COUNT, BIGINT columns) and numeric (SUM of BIGINT) as JS numbers: every figure we keep is below 2^53. */
const INT8_OID = 20;
const NUMERIC_OID = 1700;
const types = {
  getTypeParser(oid: number, format?: string) {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

export interface PoolOptions {
  /** postgres://user[:password]@host[:port]/database */
  readonly url: string;
  /** Tables live in this schema (created if missing); default: the connection's search_path (public). */
  readonly schema?: string;
  readonly max?: number;
}

/** A schema name we quote ourselves: letters, digits and underscores only. */
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** A pooled client for one database (and schema), parsing counts and sums as numbers. */
export function createPool(options: PoolOptions): pg.Pool {
  if (options.schema !== undefined && !SCHEMA_NAME.test(options.schema)) {
    throw Errors.STORAGE_FAILED(redactUrl(options.url), `schema name "${options.schema}" must be letters, digits and underscores`);
  }
  return new pg.Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    application_name: 'organism',
    types,
    // A database that does not answer must not hang a boot or a request forever.
    connectionTimeoutMillis: 10_000,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
}

/** The URL without its password (for messages and logs: secrets are never logged). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'the PostgreSQL database (unparsable URL)';
  }
}

/** PostgreSQL SQLSTATE classes and client errors, as the catalogue's storage errors with a plain detail. */
export function pgStorageError(where: string, err: unknown): OrganismError {
  if (err instanceof OrganismError) return err;
  const code = (err as { code?: string }).code ?? '';
  if (isRefusedWrite(code)) return Errors.STORAGE_REJECTED(where, `${(err as Error).message ?? String(err)} (SQLSTATE ${code})`);
  return Errors.STORAGE_FAILED(where, describePgFailure(err));
}

/**
 * A failure of a running process's query or write. One that met no server (refused, cut,
 * timed out) is the database being unreachable, STORAGE_UNAVAILABLE: a client is told to
 * retry (Retry-After), and the outage is logged once by the reachability watch, not by each
 * request, heartbeat or claim that met it. Anything else as pgStorageError.
 */
export function pgRuntimeError(where: string, err: unknown): OrganismError {
  if (err instanceof OrganismError) return err;
  if (isConnectionFailure(err)) return Errors.STORAGE_UNAVAILABLE(where, describePgFailure(err));
  return pgStorageError(where, err);
}

function describePgFailure(err: unknown): string {
  const code = (err as { code?: string }).code ?? '';
  const message = (err as Error).message ?? String(err);
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH' || code === 'ETIMEDOUT' || /timeout exceeded when trying to connect/i.test(message)) {
    return `cannot reach the PostgreSQL server (${message})`;
  }
  if (code === '3D000') return `the database does not exist (${message}); create it first (createdb)`;
  if (code.startsWith('28')) return `the server refused the login (${message})`;
  if (code === '53100') return `the database server's disk is full (${message})`;
  if (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03') return `the connection to PostgreSQL was lost (${message})`;
  return message;
}

/**
 * SQLSTATE classes of a statement refused for its data, which retrying cannot cure: 22 data
 * exception (an invalid byte sequence, a value out of range), 23 integrity constraint violation,
 * 54 program limit exceeded (a value too large to index). Unlike 08 connection exceptions,
 * 57P admin shutdown, 53 insufficient resources or 40 rollbacks, which pass.
 */
export function isRefusedWrite(sqlstate: string): boolean {
  return /^(22|23|54)[0-9A-Z]{3}$/.test(sqlstate);
}

/** What the stores read through: the pool's query, its failures as the catalogue's storage errors. */
export interface Reader {
  query<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<pg.QueryResult<R>>;
}

/** `onError` hears each failure first (the reachability watch counts connection failures). */
export function reader(pool: pg.Pool, where: string, onError?: (err: unknown) => void): Reader {
  return {
    query: async <R extends pg.QueryResultRow>(text: string, values: readonly unknown[] = []) => {
      try {
        return await pool.query<R>(text, [...values]);
      } catch (err) {
        onError?.(err);
        throw pgRuntimeError(where, err);
      }
    },
  };
}
