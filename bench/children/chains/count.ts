import { sqlStatements } from '../../lib/sql-statements.js';
import type { WorkCounts } from './system.js';

/**
 * Counting the statements a client sends, by wrapping the driver's query method in this process.
 * Transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE) is not a statement here; a
 * commit is a COMMIT, or a write sent outside a transaction (it commits on its own).
 */

const CONTROL = /^\s*(begin|commit|rollback|savepoint|release|start\s+transaction|end)\b/i;
const COMMIT = /^\s*(commit|end)\b/i;
const BEGIN = /^\s*(begin|start\s+transaction)\b/i;
const READ = /^\s*(select|show)\b/i;

export class Counter {
  statements = 0;
  commits = 0;
  snapshot(): WorkCounts {
    return { statements: this.statements, commits: this.commits };
  }
}

type Callback = (err: unknown, res: unknown) => void;
type QueryMethod = (this: object, ...args: unknown[]) => unknown;

/**
 * Wraps node-postgres `Client.prototype.query` (every Pool query goes through it). `onDone`
 * sees each statement that succeeded, when its result arrives.
 */
export function countPgQueries(Client: { prototype: { query: QueryMethod } }, counter: Counter, onDone?: (text: string, values: readonly unknown[]) => void): () => void {
  const original = Client.prototype.query;
  const inTransaction = new WeakMap<object, boolean>();
  Client.prototype.query = function (this: object, ...args: unknown[]): unknown {
    const config = args[0] as string | { text?: string; values?: unknown[] } | undefined;
    const text = typeof config === 'string' ? config : (config?.text ?? '');
    const values = (Array.isArray(args[1]) ? args[1] : typeof config === 'object' ? config?.values : undefined) ?? [];
    // A simple-protocol query may carry a whole transaction (`BEGIN; ...; COMMIT`): count each statement.
    for (const statement of sqlStatements(text)) {
      if (BEGIN.test(statement)) inTransaction.set(this, true);
      else if (CONTROL.test(statement)) {
        if (COMMIT.test(statement)) counter.commits++;
        inTransaction.set(this, false);
      } else {
        counter.statements++;
        if (!inTransaction.get(this) && !READ.test(statement)) counter.commits++;
      }
    }
    if (!onDone) return original.apply(this, args);
    const last = args.length - 1;
    if (typeof args[last] === 'function') {
      const callback = args[last] as Callback;
      args[last] = (err: unknown, res: unknown) => {
        if (!err) onDone(text, values);
        callback(err, res);
      };
      return original.apply(this, args);
    }
    const result = original.apply(this, args);
    if (result && typeof (result as Promise<unknown>).then === 'function')
      (result as Promise<unknown>).then(
        () => onDone(text, values),
        () => {},
      );
    return result;
  };
  return () => {
    Client.prototype.query = original;
  };
}

interface SqliteStatement {
  readonly source: string;
  readonly reader: boolean;
  readonly database: { readonly inTransaction: boolean };
}

/** Wraps better-sqlite3's Statement methods (db.transaction() runs its BEGIN and COMMIT through them too). */
export function countSqliteStatements(statementPrototype: Record<string, unknown>, counter: Counter): () => void {
  const originals = new Map<string, unknown>();
  for (const method of ['run', 'get', 'all', 'iterate']) {
    const original = statementPrototype[method] as QueryMethod;
    originals.set(method, original);
    statementPrototype[method] = function (this: SqliteStatement, ...args: unknown[]): unknown {
      if (CONTROL.test(this.source)) {
        if (COMMIT.test(this.source)) counter.commits++;
      } else {
        counter.statements++;
        if (!this.database.inTransaction && !this.reader) counter.commits++;
      }
      return original.apply(this, args);
    };
  }
  return () => {
    for (const [method, original] of originals) statementPrototype[method] = original;
  };
}
