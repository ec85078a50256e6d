import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadOrganism } from '../../src/config/load.js';
import { Organism, type OrganismOptions } from '../../src/organism/organism.js';
import { buildApp } from '../../src/service/app.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { openPostgresStorage } from '../../src/store/postgres/index.js';
import { DATABASE_FILE } from '../../src/store/sqlite/storage.js';
import { OrganismTracing, resolveTracing } from '../../src/telemetry/tracing.js';
import { createLogger, setLogRedactor } from '../../src/util/logger.js';
import { openAiOk, startOpenAiServer } from '../llm/servers/openai-server.js';
import { eventually, settled } from '../pump/harness.js';
import { createTestDatabase, withPostgres } from '../store/contract/backends.js';
import { startOtlpReceiver } from '../telemetry/otlp-receiver.js';

/**
 * Issue 30, item 4, acceptance: a corpus of personal data and credentials seeded through a
 * thread (in the injected payload, in the answers a local OpenAI-compatible server streams in
 * pieces of 4 characters, in a code tool's result, in a handler's log line) is found in none of
 * the database's recorded calls, the WebSocket stream, the OTLP export or the log, on SQLite
 * and PostgreSQL. What goes to the provider is unchanged; the journal keeps payloads as given
 * unless `privacy.redact_payloads: true`.
 */

const VALUES = {
  email: 'ada.lovelace@example.com',
  phone: '+44 20 7946 0958',
  card: '4111 1111 1111 1111',
  iban: 'GB82 WEST 1234 5698 7654 32',
  api_key: 'sk-proj-Abcdefghijklmnop1234567890',
  custom: 'ORD-123456',
};
const CORPUS = Object.values(VALUES);
const ALL = CORPUS.join(' / ');
/** Also as digits only (a card number without its spaces is the same card). */
const NEEDLES = [...CORPUS, '4111111111111111', 'GB82WEST12345698765432'];

const MODULE = `
import { defineTool, definePayload, type Handler } from 'organism';

export const lookup = defineTool({
  description: 'Looks a customer up',
  input: definePayload('Lookup', { email: 'string' }),
  run: async () => ({ iban: ${JSON.stringify(VALUES.iban)}, phone: ${JSON.stringify(VALUES.phone)}, key: ${JSON.stringify(VALUES.api_key)} }),
});

export const outbox: Handler = (payload, ctx) => {
  ctx.log.info('answer received ' + JSON.stringify(payload), { payload });
};
`;

function config(url: string, redactPayloads: boolean): string {
  return [
    'organism: {name: private}',
    'llm:',
    '  providers:',
    `    - {name: local, type: openai, base_url: ${url}, models: [gpt-4o], max_retries: 0}`,
    'privacy:',
    "  redact: [email, phone, card, iban, api_key, {pattern: 'ORD-\\d{6}'}]",
    `  redact_payloads: ${redactPayloads}`,
    'payloads:',
    '  Ticket: {fields: {text: string}}',
    '  Answer: {fields: {text: string}}',
    'listeners:',
    '  - name: desk',
    '    handler: builtin:llm',
    '    prompt: You answer tickets.',
    '    model: gpt-4o',
    '    payload: Ticket',
    '    peers: [outbox]',
    '    tools: [./module.ts#lookup]',
    '  - name: outbox',
    '    handler: ./module.ts#outbox',
    '    payload: Answer',
    '',
  ].join('\n');
}

interface Store {
  readonly storage: NonNullable<OrganismOptions['storage']>;
  /** Every recorded LLM call and tool run, as the database holds them (text). */
  recorded(): Promise<string>;
  /** The journal's payloads, as the database holds them. */
  payloads(): Promise<string>;
}

const stores: Array<{ name: string; open(): Promise<Store> }> = [
  {
    name: 'sqlite',
    open: async () => {
      const dataDir = mkdtempSync(path.join(tmpdir(), 'redaction-'));
      cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
      const read = (sql: string) => {
        const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
        try {
          return JSON.stringify(db.prepare(sql).all());
        } finally {
          db.close();
        }
      };
      return {
        storage: openSqliteStorage({ dataDir }),
        recorded: async () => read('SELECT data FROM llm_calls') + read('SELECT data FROM llm_tool_calls'),
        payloads: async () => read('SELECT payload FROM journal'),
      };
    },
  },
];
if (withPostgres('redaction before recording')) {
  stores.push({
    name: 'postgres',
    open: async () => {
      const db = await createTestDatabase();
      cleanup.push(() => db.drop());
      const read = async (sql: string) => {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        try {
          return JSON.stringify((await c.query(sql)).rows);
        } finally {
          await c.end();
        }
      };
      return {
        storage: await openPostgresStorage({ url: db.url, cluster: { maxAttempts: 3 } }),
        recorded: async () => (await read('SELECT data::text FROM llm_calls')) + (await read('SELECT data::text FROM llm_tool_calls')),
        payloads: () => read('SELECT payload::text FROM journal'),
      };
    },
  });
}

const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
  setLogRedactor(null);
});

const TOKEN = 'redaction-test-operator-token-0123456789';

async function run(store: Store, redactPayloads: boolean) {
  const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) });
  const llm = await startOpenAiServer({
    replies: [
      { body: openAiOk(`Looking up ${VALUES.email} for ${VALUES.custom}.`, {}, 'gpt-4o', [call('c1', 'lookup', { email: VALUES.email })]) },
      { body: openAiOk(`Found: ${ALL}.`, {}, 'gpt-4o', [call('c2', 'send_to_outbox', { text: `Customer: ${ALL}` })]) },
    ],
  });
  cleanup.push(() => llm.close());
  const receiver = await startOtlpReceiver();
  cleanup.push(() => receiver.close());
  const dir = mkdtempSync(path.join(tmpdir(), 'redaction-project-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'organism.yaml'), config(llm.url, redactPayloads));
  writeFileSync(path.join(dir, 'module.ts'), MODULE);

  const log: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      log.push(String(chunk));
      done();
    },
  });
  const logger = createLogger('debug', 'organism', undefined, destination);
  const organism = new Organism(await loadOrganism(path.join(dir, 'organism.yaml')), { storage: store.storage, logger });
  const tracing = new OrganismTracing(resolveTracing({ otlp: { endpoint: receiver.url, protocol: 'http/json' }, captureContent: true }, { name: 'private', version: 'test' }, {})!);
  tracing.attach(organism);
  await organism.start();
  const app = await buildApp({ organism, auth: { tokens: [{ name: 'ops', role: 'operator', token: TOKEN }] }, version: 'test', logger });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await app.close();
    await organism.stop({ timeoutMs: 2_000 });
    await tracing.shutdown();
  };
  cleanup.push(stop);

  const frames: string[] = [];
  const socket = new WebSocket(`ws://127.0.0.1:${port}/ws?token=${TOKEN}`);
  socket.on('message', (data) => frames.push(String(data)));
  await new Promise<void>((resolve, reject) => (socket.once('message', () => resolve()), socket.once('error', reject)));

  const res = await fetch(`http://127.0.0.1:${port}/api/v1/inject`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to: 'desk', payload: { Ticket: { text: `Please help ${ALL}` } } }),
  });
  expect(res.status).toBe(200);
  const { threadId } = (await res.json()) as { threadId: string };
  expect((await settled(organism, threadId)).status).toBe('completed');
  await eventually(() => frames.some((f) => f.includes('"thread_updated"') && f.includes('completed')) || null);
  await eventually(() => log.some((l) => l.includes('answer received')) || null);
  socket.close();
  await tracing.flush();
  await eventually(() => receiver.spans.some((s) => s.name.startsWith('chat')) || null);
  await stop();
  return { llm, frames, log, spans: receiver.spans };
}

function expectNone(where: string, text: string): void {
  for (const needle of NEEDLES) expect(text.includes(needle), `${needle} in ${where}`).toBe(false);
}

for (const s of stores) {
  describe(`privacy.redact (${s.name})`, () => {
    it('no value of the corpus in the recorded calls and tool runs, the WebSocket stream (deltas split in pieces of 4 included), the OTLP export or the log; the provider got them as they were', async () => {
      const store = await s.open();
      const r = await run(store, false);
      const recorded = await store.recorded();
      expect(recorded).toContain('[redacted:email]');
      expect(recorded).toContain('[redacted:pattern]');
      expectNone('the recorded calls', recorded);

      const ws = r.frames.join('\n');
      expect(r.frames.some((f) => f.includes('"llm_delta"'))).toBe(true);
      expect(ws).toContain('[redacted:card]');
      expectNone('the WebSocket stream', ws);
      // The deltas of each call, joined, are the answer with its values redacted.
      const deltas = r.frames.filter((f) => f.includes('"llm_delta"')).map((f) => (JSON.parse(f) as { text: string }).text);
      expectNone('the llm_delta frames joined', deltas.join(''));
      expect(deltas.join('')).toContain('Found: [redacted:email] / [redacted:phone] / [redacted:card] / [redacted:iban] / [redacted:api_key] / [redacted:pattern].');

      const spans = JSON.stringify(r.spans);
      expect(spans).toContain('[redacted:');
      expectNone('the OTLP export', spans);

      const log = r.log.join('');
      expect(log).toContain('answer received');
      expectNone('the log', log);

      // What the provider was sent is unchanged.
      expect(JSON.stringify(r.llm.seen[0]!.body)).toContain(VALUES.email);
      expect(JSON.stringify(r.llm.seen[1]!.body)).toContain(VALUES.api_key);
      // The journal's payloads are the application's data: kept as given.
      expect(await store.payloads()).toContain(VALUES.email);
    }, 60_000);

    it('privacy.redact_payloads: true redacts the journal payloads too', async () => {
      const store = await s.open();
      await run(store, true);
      const payloads = await store.payloads();
      expect(payloads).toContain('[redacted:email]');
      expectNone('the journal payloads', payloads);
    }, 60_000);
  });
}
