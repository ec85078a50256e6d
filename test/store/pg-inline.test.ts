import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRefusedWrite } from '../../src/store/postgres/pool.js';
import { inlineParams, PgWriter, quoteLiteral, sqlLiteral, type Tx } from '../../src/store/postgres/writer.js';
import { createTestDatabase, testPool, withPostgres } from './contract/backends.js';

/**
 * The PostgreSQL writer sends a transaction's first statement with its BEGIN as one
 * simple-protocol query, its parameters written in as literals (inlineParams): the server must
 * read exactly the values it would have received as parameters, whatever they hold.
 */
const run = withPostgres('parameters written in as literals');

const NASTY = ["it's", 'back\\slash', '"quoted"', '{braces},commas', 'NULL', '$1 and $2', "'; DROP TABLE x; --", 'tab\there\nnewline', 'emoji 🧪 and ü', '', " E'\\x'"];

describe('quoteLiteral', () => {
  it("writes what pg's escapeLiteral writes, for any string", () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 30 }), (t) => quoteLiteral(t) === pg.escapeLiteral(t)),
      { numRuns: 5_000 },
    );
    for (const t of ["it's", 'back\\slash', "both\\'", '', "''", '\\\\']) expect(quoteLiteral(t)).toBe(pg.escapeLiteral(t));
  });
});

describe.skipIf(!run)('inlineParams (PostgreSQL)', () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = testPool({ connectionString: db.url, max: 2 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  /** The rows of `text` with `values` sent as parameters, and written in. */
  const both = async (text: string, values: unknown[]) => {
    const inlined = inlineParams(text, values);
    expect(inlined).not.toBeNull();
    return { params: (await pool.query(text, values)).rows, inlined: (await pool.query(inlined!)).rows };
  };

  it('reads strings, numbers, booleans and nulls as their parameters would be read', async () => {
    for (const s of NASTY) {
      const r = await both(`SELECT $1::text AS s, length($1) AS n, $2::bigint AS big, $3::float8 AS f, $4::bool AS b, $5::text AS nothing, '$1' AS kept`, [
        s,
        1_732_740_000_123,
        -0.125,
        true,
        null,
      ]);
      expect(r.inlined).toEqual(r.params);
      expect(r.inlined[0]).toMatchObject({ s, kept: '$1' });
    }
  });

  it('reads arrays (text with every awkward character, ints, booleans, nulls in them) as their parameters would be read', async () => {
    const r = await both(`SELECT a, i, b FROM unnest($1::text[], $2::int[], $3::bool[]) WITH ORDINALITY AS u(a, i, b, o) ORDER BY o`, [
      [...NASTY, null],
      NASTY.map((_, k) => k - 3).concat([0]),
      NASTY.map((_, k) => k % 2 === 0).concat([false]),
    ]);
    expect(r.inlined).toEqual(r.params);
    expect(r.inlined.map((row) => row.a)).toEqual([...NASTY, null]);
    const empty = await both(`SELECT cardinality($1::text[]) AS n`, [[]]);
    expect(empty.inlined).toEqual([{ n: 0 }]);
  });

  it('reads any strings, alone and in arrays, as their parameters would be read (fast-check)', async () => {
    const text = fc.string({ unit: fc.constantFrom('a', "'", '\\', '"', ',', '{', '}', ' ', 'E', 'é', '\n', '$', '1', 'NULL'), maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(text, fc.array(text, { maxLength: 5 }), async (one, many) => {
        const r = await both('SELECT $1::text AS one, $2::text[] AS many', [one, many]);
        expect(r.inlined).toEqual(r.params);
      }),
      { numRuns: 150 },
    );
  });

  it('keeps a negative number one (no comment made of a minus and a minus sign)', async () => {
    const r = await both('SELECT 10-$1 AS a, $2::int AS b, 3 - $1 AS c', [-2, -7]);
    expect(r.inlined).toEqual(r.params);
    expect(r.inlined).toEqual([{ a: 12, b: -7, c: 5 }]);
  });

  it('leaves alone what it cannot write in plainly: comments, dollar quotes, other kinds of values, missing parameters', () => {
    expect(inlineParams('SELECT $1 -- a comment', ['x'])).toBeNull();
    expect(inlineParams('SELECT $1 /* a comment */', ['x'])).toBeNull();
    expect(inlineParams('SELECT $$x$$, $1', ['x'])).toBeNull();
    expect(inlineParams('SELECT $1', [{ an: 'object' }])).toBeNull();
    expect(inlineParams('SELECT $1', [Number.NaN])).toBeNull();
    expect(inlineParams('SELECT $1, $2', ['x'])).toBeNull();
    expect(inlineParams("SELECT '--', $1", ['x'])).toBe("SELECT '--', 'x'");
  });

  it('never writes a NUL into a query (the server would read the query only up to it): such values go as parameters, and a literal of one is refused as data', async () => {
    expect(inlineParams('SELECT $1', ['a\u0000b'])).toBeNull();
    expect(inlineParams('SELECT $1', [['ok', 'a\u0000b']])).toBeNull();
    let refused: unknown = null;
    try {
      sqlLiteral('a\u0000b');
    } catch (err) {
      refused = err;
    }
    expect(isRefusedWrite((refused as { code: string }).code)).toBe(true);
    // What the parameter path answers, for comparison: the same class of refusal.
    const err = await pool.query('SELECT $1::text AS t', ['a\u0000b']).catch((e: unknown) => e);
    expect(isRefusedWrite((err as { code: string }).code)).toBe(true);
  });

  describe('named statements (EXECUTE of a statement prepared once per connection)', () => {
    /** A writer on a pool of one connection, so that every transaction finds what the last one prepared. */
    const oneConnection = () => {
      const errors: unknown[] = [];
      const single = testPool({ connectionString: db.url, max: 1 });
      return { single, writer: new PgWriter(single, (err) => errors.push(err)), errors };
    };
    const SUM = { name: 'test-sum', text: 'SELECT sum(n)::int AS total, count(*)::int AS n FROM unnest($1::int[]) AS u(n)' };
    /** How the connection's prepared statement of `name` has been planned so far (read in the writer's own transaction). */
    const plans = (tx: Tx, name: string) =>
      tx.query<{ generic: string; custom: string }>('SELECT generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements WHERE name = $1', [`organism:${name}`]);

    it('runs with the COMMIT, reads its values as parameters would be read, and is planned once per connection when generic', async () => {
      const { single, writer } = oneConnection();
      try {
        const totals: number[] = [];
        for (const values of [[1, 2, 3], [-4], [7, 8, 9, 10, 11, 12]]) {
          await writer.write(async (tx) => {
            expect(tx.atCommit({ ...SUM, values: [values], generic: true }, (r) => totals.push(r.rows[0].total))).toBe(true);
          });
        }
        expect(totals).toEqual([6, -4, 57]);
        // The strings it reads are the literals inlineParams writes: the awkward ones too.
        const read: unknown[] = [];
        await writer.write(async (tx) => {
          tx.atCommit({ name: 'test-echo', text: 'SELECT a FROM unnest($1::text[]) WITH ORDINALITY AS u(a, o) ORDER BY o', values: [[...NASTY, null]] }, (r) =>
            read.push(...r.rows.map((row) => row.a)),
          );
        });
        expect(read).toEqual([...NASTY, null]);
        let seen: { generic: string; custom: string }[] = [];
        await writer.write(async (tx) => {
          seen = (await plans(tx, SUM.name)).rows;
        });
        // Prepared once (a second PREPARE of the name would have failed), planned generic once, never for its values.
        expect(seen).toEqual([{ generic: '3', custom: '0' }]);
      } finally {
        await single.end();
      }
    });

    it('prepares a statement again as its runs on a connection pass 10, 100, ...: its plan follows the tables as they grow', async () => {
      const { single, writer } = oneConnection();
      const table = `grow_${Math.random().toString(36).slice(2, 8)}`;
      await pool.query(`CREATE TABLE ${table} (id TEXT PRIMARY KEY, n INT NOT NULL)`);
      try {
        const bump = { name: 'test-grow', text: `UPDATE ${table} g SET n = g.n + 1 FROM unnest($1::text[]) AS u(id) WHERE g.id = u.id`, generic: true };
        const run = (ids: string[]) => writer.write(async (tx) => void tx.atCommit({ ...bump, values: [ids] }));
        /** The plan the connection keeps for the statement (read in the writer's own transaction). */
        const plan = async () => {
          let text = '';
          await writer.write(async (tx) => {
            await tx.query('SET LOCAL plan_cache_mode = force_generic_plan');
            text = (await tx.query(`EXPLAIN EXECUTE "organism:test-grow"('{a}')`)).rows.map((r) => r['QUERY PLAN']).join('\n');
          });
          return text;
        };
        for (let i = 0; i < 10; i++) await run(['a']);
        // Planned on an empty table: it reads the whole table, which then grows.
        expect(await plan()).toContain(`Seq Scan on ${table}`);
        await pool.query(`INSERT INTO ${table} SELECT 'k' || g, 0 FROM generate_series(1, 50000) AS g`);
        await run(['k1', 'k2']);
        const replanned = await plan();
        expect(replanned).toContain(`Index Scan using ${table}_pkey`);
        expect(replanned).not.toContain('Seq Scan');
        expect((await pool.query(`SELECT n FROM ${table} WHERE id IN ('k1', 'k2')`)).rows).toEqual([{ n: 1 }, { n: 1 }]);
      } finally {
        await single.end();
        await pool.query(`DROP TABLE ${table}`);
      }
    });

    it('opens a transaction as the EXECUTE of its prepared statement (with BEGIN, one round trip)', async () => {
      const { single, writer } = oneConnection();
      try {
        const totals: number[] = [];
        for (const values of [[1], [2, 3]]) await writer.write(async (tx) => void totals.push((await tx.query({ ...SUM, values: [values] })).rows[0].total));
        expect(totals).toEqual([1, 5]);
        let prepared: unknown[] = [];
        await writer.write(async (tx) => {
          prepared = (await tx.query<{ name: string }>(`SELECT name FROM pg_prepared_statements WHERE name LIKE 'organism:%'`)).rows.map((r) => r.name);
        });
        expect(prepared).toEqual([`organism:${SUM.name}`]);
      } finally {
        await single.end();
      }
    });

    it('says no to values that cannot be literals (a NUL), queuing nothing', async () => {
      const { single, writer } = oneConnection();
      try {
        let queued: boolean | null = null;
        await writer.write(async (tx) => {
          queued = tx.atCommit({ name: 'test-text', text: 'SELECT $1::text AS t', values: ['a\u0000b'] });
        });
        expect(queued).toBe(false);
      } finally {
        await single.end();
      }
    });

    it('a transaction that fails after preparing gives up its connection: the next one prepares again on a new connection and runs', async () => {
      const { single, writer, errors } = oneConnection();
      try {
        const failed = writer.write(async (tx) => {
          tx.atCommit({ ...SUM, values: [[1]] });
          // Fails after the PREPARE in the same query string ran (PREPARE is not undone by the rollback).
          tx.atCommit('SELECT 1 / 0');
        });
        await expect(failed).rejects.toMatchObject({ code: '22012' });
        const totals: number[] = [];
        await writer.write(async (tx) => void tx.atCommit({ ...SUM, values: [[20, 22]] }, (r) => totals.push(r.rows[0].total)));
        expect(totals).toEqual([42]);
        expect(errors.length).toBeGreaterThan(0);
      } finally {
        await single.end();
      }
    });
  });
});
