import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { inject } from 'vitest';
import { loadOrganism } from '../../src/config/index.js';
import { Organism } from '../../src/organism/organism.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { openPostgresStorage } from '../../src/store/postgres/index.js';
import { createTestDatabase, withPostgres } from '../store/contract/backends.js';
import { buildApp, type BuildAppOptions } from '../../src/service/app.js';
import { createClient, type FetchLike, type OrganismClient } from '../../src/client/index.js';
import { ResponseChecker } from './openapi-check.js';

export const OPERATOR = 'operator-token-0123456789';
export const VIEWER = 'viewer-token-0123456789';

/** What the fixture's code handlers record (shared with the handler module through globalThis). */
export interface Probe {
  calls: Array<{ listener: string; text: string; threadId: string; messageId: string }>;
  aborted: string[];
  release: Map<string, () => void>;
}

export function probe(): Probe {
  const g = globalThis as { __serviceProbe?: Probe };
  g.__serviceProbe ??= { calls: [], aborted: [], release: new Map() };
  return g.__serviceProbe;
}

/** The code handlers of the fixture organism (echo, slow, broken), as its handlers.ts. */
export const HANDLERS = `
const g = globalThis as { __serviceProbe?: any };
g.__serviceProbe ??= { calls: [], aborted: [], release: new Map() };
const probe = g.__serviceProbe;

/** Records what it receives; its branch ends there. */
export function echo(payload: Record<string, unknown>, ctx: { self: string; threadId: string; messageId: string }) {
  probe.calls.push({ listener: ctx.self, text: String(payload.text), threadId: ctx.threadId, messageId: ctx.messageId });
}

/** Records, then waits until the test releases it or the delivery is aborted. */
export async function slow(payload: Record<string, unknown>, ctx: { self: string; threadId: string; messageId: string; signal: AbortSignal }) {
  const text = String(payload.text);
  probe.calls.push({ listener: ctx.self, text, threadId: ctx.threadId, messageId: ctx.messageId });
  await new Promise<void>((resolve, reject) => {
    probe.release.set(text, resolve);
    ctx.signal.addEventListener('abort', () => { probe.aborted.push(text); reject(new Error('aborted')); }, { once: true });
  });
}

/** Always fails: its deliveries end FAILED in the journal. */
export function broken() {
  throw new Error('broken on purpose');
}
`;

export interface ListenerYaml {
  readonly name: string;
  readonly yaml: string;
}

export const BASE_LISTENERS: ListenerYaml[] = [
  {
    name: 'echo',
    yaml: `  - name: echo
    description: Records what it receives
    payload: Text
    handler: ./handlers.ts#echo`,
  },
  {
    name: 'slow',
    yaml: `  - name: slow
    description: Waits until released
    payload: Text
    handler: ./handlers.ts#slow
    timeout_seconds: 60`,
  },
  {
    name: 'broken',
    yaml: `  - name: broken
    description: Always fails
    payload: Text
    handler: ./handlers.ts#broken`,
  },
  {
    name: 'greeter',
    yaml: `  - name: greeter
    description: Greets people and has the shouter announce it
    agent: true
    peers: [shouter]
    payload: Greeting
    handler: builtin:llm
    model: mock-small
    prompt: You greet people. Ask the shouter to announce the greeting.`,
  },
  {
    name: 'shouter',
    yaml: `  - name: shouter
    description: Announces text loudly
    payload: Text
    handler: ./handlers.ts#echo`,
  },
];

export function organismYaml(listeners: readonly ListenerYaml[] = BASE_LISTENERS, name = 'service-test'): string {
  return `organism:
  name: ${name}
max_tokens_per_thread: 50000
llm:
  providers:
    - name: mock
      type: mock
      models: [mock-]
      script:
        greeter:
          - '<send to="shouter"><Text><text>Hello, {{name}}!</text></Text></send>'
  pricing:
    mock-small: {prompt: 0.5, completion: 1.5}
payloads:
  Text:
    description: Plain text
    fields:
      text: string
  Greeting:
    description: Someone to greet
    fields:
      name: string
      times:
        type: integer
        optional: true
listeners:
${listeners.map((l) => l.yaml).join('\n')}
`;
}

export interface Service {
  readonly url: string;
  readonly app: FastifyInstance;
  readonly organism: Organism;
  readonly dir: string;
  readonly configPath: string;
  readonly checker: ResponseChecker;
  /** PostgreSQL: the test database's URL (null on the other stores). */
  readonly databaseUrl: string | null;
  readonly stops: number;
  readonly restarts: number;
  writeConfig(text: string): void;
  /** The typed client (organism/client) as an operator; its answers are checked against the OpenAPI document too. */
  readonly client: OrganismClient;
  /** The typed client with any token (null: none). */
  clientAs(token: string | null): OrganismClient;
  /** Real HTTP; every response is checked against the OpenAPI document. */
  request(method: string, path: string, options?: RequestOptions): Promise<ApiResponse>;
  close(): Promise<void>;
}

export interface RequestOptions {
  readonly token?: string | null;
  readonly body?: unknown;
  /** Sent as is (for malformed bodies). */
  readonly rawBody?: string;
  readonly headers?: Record<string, string>;
}

export interface ApiResponse {
  readonly status: number;
  readonly headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: a response body, read by the tests as whatever they expect
  readonly body: any;
}

export type StorageKind = 'memory' | 'sqlite' | 'postgres';

/** The stores the service tests run on: PostgreSQL too when a server answers (always in CI). */
export const STORAGE_KINDS: readonly StorageKind[] = withPostgres('service tests') ? ['memory', 'sqlite', 'postgres'] : ['memory', 'sqlite'];

export async function startService(options: { yaml?: string; app?: Partial<BuildAppOptions>; storage?: StorageKind; files?: Record<string, string> } = {}): Promise<Service> {
  const dir = mkdtempSync(path.join(tmpdir(), 'organism-service-'));
  const configPath = path.join(dir, 'organism.yaml');
  writeFileSync(path.join(dir, 'handlers.ts'), HANDLERS);
  for (const [name, text] of Object.entries(options.files ?? {})) writeFileSync(path.join(dir, name), text);
  writeFileSync(configPath, options.yaml ?? organismYaml());
  const loaded = await loadOrganism(configPath);
  // The CLI serves on SQLite (or PostgreSQL with --store); the memory stores are the library
  // default. All must behave the same. PostgreSQL: a fresh database, dropped at close, opened
  // in cluster mode as `organism serve --store` runs it (issue 15): the database is the work
  // queue this server claims from, as one of the processes that may share it.
  const database = options.storage === 'postgres' ? await postgresForService() : null;
  const storage =
    options.storage === 'sqlite'
      ? openSqliteStorage({ dataDir: path.join(dir, 'data') })
      : database
        ? await openPostgresStorage({ url: database.url, cluster: { maxAttempts: loaded.config.journal.maxAttempts } })
        : undefined;
  // A fixture that silently fell back to the single-owner store would test the wrong thing.
  if (database && !(storage as { work?: unknown }).work) throw new Error('the PostgreSQL store did not open in cluster mode (no work source)');
  const organism = new Organism(loaded, storage ? { storage } : {});
  await organism.start();
  let stops = 0;
  let restarts = 0;
  const app = await buildApp({
    organism,
    auth: {
      tokens: [
        { name: 'ops', role: 'operator', token: OPERATOR },
        { name: 'dashboard', role: 'viewer', token: VIEWER },
      ],
    },
    version: '9.9.9-test',
    onStop: () => void stops++,
    onRestart: () => void restarts++,
    reloadConfig: () => loadOrganism(configPath),
    ...options.app,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  const doc = (await (await fetch(`${url}/api/v1/openapi.json`, { headers: { authorization: `Bearer ${OPERATOR}` } })).json()) as ConstructorParameters<typeof ResponseChecker>[0];
  const checker = new ResponseChecker(doc);

  const request = async (method: string, p: string, o: RequestOptions = {}): Promise<ApiResponse> => {
    const headers: Record<string, string> = { ...o.headers };
    const token = o.token === undefined ? OPERATOR : o.token;
    if (token !== null) headers['authorization'] = `Bearer ${token}`;
    let body: string | undefined;
    if (o.rawBody !== undefined) body = o.rawBody;
    else if (o.body !== undefined) body = JSON.stringify(o.body);
    if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
    const res = await fetch(`${url}${p}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: left as text, the assertion will show it
    }
    if (method !== 'HEAD') checker.check(method, p, res.status, parsed);
    return { status: res.status, headers: res.headers, body: parsed };
  };

  // The client's requests go through the same OpenAPI check as `request`.
  const checkedFetch: FetchLike = async (u, init) => {
    const res = await fetch(u, init);
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: the client reports it as the error detail
    }
    checker.check(init.method, u.slice(url.length), res.status, parsed);
    return { status: res.status, ok: res.ok, text: async () => text };
  };
  const clientAs = (token: string | null): OrganismClient => createClient({ baseUrl: url, ...(token !== null ? { token } : {}), fetch: checkedFetch });

  return {
    url,
    app,
    client: clientAs(OPERATOR),
    clientAs,
    organism,
    dir,
    configPath,
    checker,
    databaseUrl: database?.url ?? null,
    get stops() {
      return stops;
    },
    get restarts() {
      return restarts;
    },
    writeConfig: (text) => writeFileSync(configPath, text),
    request,
    close: async () => {
      await app.close();
      if (organism.status !== 'stopped') await organism.stop({ timeoutMs: 2_000 });
      await database?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A fresh PostgreSQL place for one service: a schema of its own in the run's database
 * (test/support/postgres-run-database.ts), named in the URL's search_path as `organism serve
 * --store` takes it, dropped at close; a fresh database when the run has none.
 */
async function postgresForService(): Promise<{ url: string; drop(): Promise<void> }> {
  const run = inject('organismRunDatabase');
  if (!run) return createTestDatabase();
  const schema = `svc_${randomBytes(6).toString('hex')}`;
  const sql = async (text: string) => {
    const client = new pg.Client({ connectionString: run });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  };
  await sql(`CREATE SCHEMA ${schema}`);
  const url = new URL(run);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { url: url.toString(), drop: () => sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`) };
}

/** Polls until `check` returns a truthy value (generous timeout for a loaded machine). */
export async function eventually<T>(check: () => T | Promise<T>, what = 'condition', timeoutMs = 15_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
