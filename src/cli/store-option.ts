/**
 * Where the organism's state lives: the embedded SQLite store in the data directory (the
 * default), or a PostgreSQL database named by `--store postgres://…` / ORGANISM_STORE.
 */
export type StoreChoice = { readonly kind: 'sqlite' } | { readonly kind: 'postgres'; readonly url: string };

const POSTGRES_URL = /^postgres(ql)?:\/\/[^\s]+$/;

/** The store chosen by the flag, else the environment; throws a message naming what was wrong. */
export function resolveStore(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): StoreChoice {
  const from = flag !== undefined ? '--store' : 'ORGANISM_STORE';
  const value = flag ?? env['ORGANISM_STORE'];
  if (value === undefined || value === '') return { kind: 'sqlite' };
  if (!POSTGRES_URL.test(value)) {
    throw new Error(`${from} must be a PostgreSQL URL (postgres://user@host:port/database); without it the embedded SQLite store in the data directory is used`);
  }
  return { kind: 'postgres', url: value };
}
