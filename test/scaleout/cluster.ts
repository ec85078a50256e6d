/**
 * A cluster-mode organism for the scale-out tests: a fresh PostgreSQL database, an organism
 * directory of its own outside the repository (organism.yaml and code handlers), one
 * `organism serve --store URL` and any number of `organism worker --store URL` processes,
 * all real child processes of the built CLI (test/cli/processes.ts; `npm run build` first).
 *
 * The handlers write what they do to a log file the test reads (one JSON line per event,
 * appended with O_APPEND, so lines of different processes never interleave and the file's
 * order is the order the events happened in): which process ran which delivery, with which
 * attempt, and whether the journal already had that delivery ACKED when the handler started
 * (a SELECT on the journal table: the handler plays an external system that can check).
 */
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { api as apiAt, killAll, startBuiltCli, startServer, stopProcess, until, type Running, type ServerProcess } from '../cli/processes.js';
import { createTestDatabase } from '../store/contract/backends.js';

/** One line of the handlers' log. */
export interface RunLine {
  readonly ev: 'start' | 'end' | 'aborted';
  readonly listener: string;
  readonly messageId: string;
  readonly threadId: string;
  readonly attempt: number;
  /** The process that ran the handler. */
  readonly pid: number;
  /** `ordered` deliveries: the sequence number the test gave the message in its thread. */
  readonly seq?: number;
  /** `start`: the journal said ACKED for this delivery when the handler started. */
  readonly acked?: boolean;
  /** `aborted`: the reason of ctx.signal. */
  readonly reason?: string;
  /** Date.now() of the event (for reporting; no assertion compares clocks). */
  readonly t: number;
}

/** What GET /api/v1/workers says of one process (camelCase or snake_case, whichever it answers). */
export interface WorkerRow {
  readonly id: string;
  readonly kind: string;
  readonly name: string | null;
  readonly pid: number;
  readonly handlers: boolean;
  readonly configHash: string | null;
  readonly heartbeatAt: number | null;
  readonly stoppedAt: number | null;
  readonly alive: boolean | null;
  readonly inFlight: number | null;
}

function workerRow(raw: Record<string, unknown>): WorkerRow {
  const pick = (camel: string, snake: string) => (raw[camel] !== undefined ? raw[camel] : raw[snake]);
  return {
    id: String(raw['id']),
    kind: String(raw['kind']),
    name: (raw['name'] as string | null | undefined) ?? null,
    pid: Number(raw['pid']),
    handlers: Boolean(raw['handlers']),
    configHash: (pick('configHash', 'config_hash') as string | null | undefined) ?? null,
    heartbeatAt: (pick('heartbeatAt', 'heartbeat_at') as number | null | undefined) ?? null,
    stoppedAt: (pick('stoppedAt', 'stopped_at') as number | null | undefined) ?? null,
    alive: (raw['alive'] as boolean | undefined) ?? null,
    inFlight: (pick('inFlight', 'in_flight') as number | null | undefined) ?? null,
  };
}

/**
 * The organism: intake (code) -> thinker (mock LLM, one call per delivery) -> sink (code, the
 * thread's side effect); `ordered` (code, FIFO checks); `slow` (code, waits `ms` or until its
 * signal aborts); `quick` (code, pause checks). Limits organism-wide are high: the processes'
 * own `--concurrency` is what bounds them, as the bench runs them.
 */
export function clusterYaml(extraListeners = ''): string {
  return `organism: {name: scaleout}
max_concurrent_handlers: 1000
max_concurrent_per_agent: 1000
max_tokens_per_thread: 1000000
journal:
  # A delivery may be in flight on several workers killed in a row.
  max_attempts: 100
llm:
  providers:
    - name: mock
      type: mock
      models: [mock-]
      latency_ms: 2
      script:
        thinker: '<send to="sink"><Result><text>{{text}}</text></Result></send>'
  pricing:
    mock-: {prompt: 1, completion: 2}
payloads:
  Job: {fields: {text: string, ms: integer}}
  Thought: {fields: {text: string}}
  Result: {fields: {text: string}}
  Step: {fields: {seq: integer, ms: integer}}
  Hold: {fields: {ms: integer}}
  Ping: {fields: {text: string}}
listeners:
  - name: intake
    handler: ./handlers.ts#intake
    payload: Job
    peers: [thinker]
  - name: thinker
    handler: builtin:llm
    model: mock-1
    prompt: Forward the text to sink.
    payload: Thought
    peers: [sink]
  - name: sink
    handler: ./handlers.ts#sink
    payload: Result
  - name: ordered
    handler: ./handlers.ts#ordered
    payload: Step
  - name: slow
    handler: ./handlers.ts#slow
    payload: Hold
    timeout_seconds: 600
  - name: quick
    handler: ./handlers.ts#quick
    payload: Ping
${extraListeners}`;
}

function handlersSource(runsFile: string, storeUrl: string): string {
  return `import { appendFileSync } from 'node:fs';
import pg from 'pg';

const RUNS = ${JSON.stringify(runsFile)};
let pool = null;
const journalState = async (id) => {
  if (!pool) {
    pool = new pg.Pool({ connectionString: ${JSON.stringify(storeUrl)}, max: 2 });
    pool.on('error', () => {}); // an idle connection ended when the test drops its database
  }
  const r = await pool.query('SELECT state FROM journal WHERE id = $1', [id]);
  return r.rows[0]?.state ?? null;
};
const line = (ev, ctx, extra = {}) =>
  appendFileSync(RUNS, JSON.stringify({ ev, listener: ctx.self, messageId: ctx.messageId, threadId: ctx.threadId, attempt: ctx.attempt, pid: process.pid, t: Date.now(), ...extra }) + '\\n');
const start = async (ctx, extra = {}) => line('start', ctx, { acked: (await journalState(ctx.messageId)) === 'ACKED', ...extra });
const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });

export async function intake(p, ctx) {
  await start(ctx);
  await sleep(p.ms, ctx.signal);
  line('end', ctx);
  return { to: 'thinker', payload: { text: p.text } };
}

export async function sink(p, ctx) {
  await start(ctx);
  await sleep(5, ctx.signal);
  // The thread's side effect, deduplicated by the delivery's message id.
  line('end', ctx);
}

export async function ordered(p, ctx) {
  await start(ctx, { seq: p.seq });
  await sleep(p.ms, ctx.signal);
  line('end', ctx, { seq: p.seq });
}

export async function slow(p, ctx) {
  await start(ctx);
  ctx.signal.addEventListener('abort', () => line('aborted', ctx, { reason: String(ctx.signal.reason?.message ?? ctx.signal.reason) }), { once: true });
  await sleep(p.ms, ctx.signal);
  if (!ctx.signal.aborted) line('end', ctx);
}

export async function quick(p, ctx) {
  await start(ctx);
  line('end', ctx);
}
`;
}

export interface ClusterOptions {
  /** Workers started with the cluster (default 2). */
  readonly workers?: number;
  /** `--concurrency` of each worker (default: none given). */
  readonly concurrency?: number;
  /** ORGANISM_LEASE_SECONDS of every process (default 3: expired leases come back within seconds). */
  readonly leaseSeconds?: number;
  /** `serve --handlers off` (default) or serve running handlers too. */
  readonly serveHandlers?: boolean;
}

export interface WorkerProcess extends Running {
  readonly name: string;
  readonly pid: number;
}

export interface Cluster {
  readonly storeUrl: string;
  readonly dir: string;
  readonly config: string;
  readonly runsFile: string;
  serve: ServerProcess;
  readonly workers: WorkerProcess[];
  /** Starts `organism worker` and waits until GET /api/v1/workers lists it. */
  startWorker(name: string, extraArgs?: string[]): Promise<WorkerProcess>;
  /** Stops a worker (SIGTERM: gracefully; SIGKILL) and forgets it; its exit code. */
  stopWorker(worker: WorkerProcess, signal?: NodeJS.Signals): Promise<number | null>;
  /** Starts serve again (after a kill), on a new port. */
  restartServe(): Promise<ServerProcess>;
  /** An authenticated request to the current serve process's /api/v1. */
  api(p: string, init?: RequestInit): Promise<Response>;
  inject(to: string, payload: Record<string, unknown>, threadId?: string): Promise<{ threadId: string; messageId: string }>;
  listWorkers(): Promise<WorkerRow[]>;
  runs(): RunLine[];
  /** Ground truth, straight from the database (`$1` placeholders). */
  sql<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Waits until the journal has no PENDING or DISPATCHED row left. */
  drained(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const processEnv = (leaseSeconds: number) => ({ ORGANISM_LEASE_SECONDS: String(leaseSeconds) });

export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const database = await createTestDatabase();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-scaleout-'));
  // The handlers import pg, as a handler of an operator's organism would from its own node_modules.
  symlinkSync(path.resolve('node_modules'), path.join(dir, 'node_modules'), 'dir');
  const config = path.join(dir, 'organism.yaml');
  const runsFile = path.join(dir, 'runs.log');
  writeFileSync(config, clusterYaml());
  writeFileSync(path.join(dir, 'handlers.ts'), handlersSource(runsFile, database.url));
  writeFileSync(runsFile, '');
  const env = processEnv(options.leaseSeconds ?? 3);
  const serveArgs = ['--store', database.url, '--data-dir', path.join(dir, 'serve-data'), ...(options.serveHandlers ? [] : ['--handlers', 'off'])];
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  pool.on('error', () => {}); // a connection ended by DROP DATABASE at close

  const cluster: Cluster = {
    storeUrl: database.url,
    dir,
    config,
    runsFile,
    serve: await startServer(config, serveArgs, { built: true, env }),
    workers: [],
    async startWorker(name, extraArgs = []) {
      const concurrency = options.concurrency !== undefined ? ['--concurrency', String(options.concurrency)] : [];
      const running = startBuiltCli(['worker', config, '--store', database.url, '--name', name, '--log-level', 'warn', ...concurrency, ...extraArgs], env);
      const pid = running.child.pid!;
      const listed = until(async () => (await cluster.listWorkers()).some((w) => w.pid === pid && w.kind === 'worker'), `worker ${name} (pid ${pid}) in GET /api/v1/workers`, 90_000);
      const died = running.exited.then((code) => Promise.reject(new Error(`worker ${name} exited (code ${code}) before it was listed`)));
      await Promise.race([listed, died]).catch((err: Error) => {
        throw new Error(`${err.message}; output:\n${running.output()}`);
      });
      died.catch(() => undefined);
      const worker = { ...running, name, pid };
      cluster.workers.push(worker);
      return worker;
    },
    async stopWorker(worker, signal = 'SIGTERM') {
      const code = await stopProcess(worker, signal);
      cluster.workers.splice(cluster.workers.indexOf(worker), 1);
      return code;
    },
    async restartServe() {
      await stopProcess(cluster.serve, 'SIGKILL');
      cluster.serve = await startServer(config, serveArgs, { built: true, env });
      return cluster.serve;
    },
    api: (p, init) => apiAt(cluster.serve.base)(p, init),
    async inject(to, payload, threadId) {
      const res = await cluster.api('/inject', { method: 'POST', body: JSON.stringify({ to, payload, ...(threadId ? { threadId } : {}) }) });
      const body = (await res.json()) as { threadId: string; messageId: string; detail?: string };
      if (!res.ok) throw new Error(`inject to ${to} answered ${res.status}: ${JSON.stringify(body)}`);
      return { threadId: body.threadId, messageId: body.messageId };
    },
    async listWorkers() {
      const res = await cluster.api('/workers');
      if (!res.ok) throw new Error(`GET /api/v1/workers answered ${res.status}: ${await res.text()}`);
      const body = (await res.json()) as { workers: Record<string, unknown>[] };
      return body.workers.map(workerRow);
    },
    runs() {
      return readFileSync(runsFile, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{') && l.endsWith('}')) // a kill may cut a line short
        .map((l) => JSON.parse(l) as RunLine);
    },
    async sql<T>(text: string, params: readonly unknown[] = []) {
      return (await pool.query(text, [...params])).rows as T[];
    },
    async drained(timeoutMs = 240_000) {
      await until(
        async () => {
          const [row] = await cluster.sql<{ n: string }>(`SELECT count(*) AS n FROM journal WHERE state IN ('PENDING', 'DISPATCHED')`);
          return Number(row!.n) === 0;
        },
        'the journal to drain',
        timeoutMs,
      );
    },
    async close() {
      killAll();
      await pool.end().catch(() => {});
      await database.drop().catch(() => {});
    },
  };
  for (let i = 1; i <= (options.workers ?? 2); i++) await cluster.startWorker(`w${i}`);
  return cluster;
}
