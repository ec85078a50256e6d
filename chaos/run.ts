/**
 * `npm run chaos`: randomized faults against a real supervised `organism serve` (the built
 * CLI) under a multi-hop workload, with the durability checks after every cycle and at the
 * end. Writes chaos/results/latest.json and latest.md; exits 1 on any violation.
 *
 *   npm run chaos -- [--store sqlite|postgres] [--cycles N] [--seed S] [--phases kill-group,hup-storm,...] [--text all|kept|off]
 *   (or CHAOS_STORE, CHAOS_CYCLES, CHAOS_SEED, CHAOS_PHASES, CHAOS_TEXT; CHAOS_PORT pins the port,
 *   CHAOS_TMPFS_MB the size of the data directory's tmpfs)
 *
 * `--store postgres` is cluster mode (chaos/lib/cluster.ts): `serve --handlers off` and two
 * `organism worker` processes on a fresh database of a private PostgreSQL server; its results
 * are chaos/results/latest-postgres.{json,md}. Every cycle of both modes also sends the text
 * probes (chaos/lib/text-probe.ts), and plays the people of the human listener: some threads
 * ask `desk`, the harness answers or rejects open asks through the inbox API at random moments
 * while the fault runs, closes the rest before the checks (chaos/lib/inbox.ts).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openSqliteStorage } from '../src/store/index.js';
import { openPostgresStorage } from '../src/store/postgres/index.js';
import { effectsOf } from '../test/scaleout/checks.js';
import { startPrivatePostgres, type PrivatePostgres } from '../test/support/private-postgres.js';
import { checkDurability, type DurabilitySource, type Violation } from '../test/crash/checks.js';
import { EFFECTS_FILE, readEffects } from '../test/crash/effects.js';
import { apiSource } from './lib/api-source.js';
import { checksOf, type CheckName } from './lib/checks.js';
import { Fatal, Harness, PHASE_WEIGHTS, PHASES, type Phase } from './lib/harness.js';
import { HostileLlm } from './lib/hostile-llm.js';
import { HumanDesk } from './lib/inbox.js';
import { signal } from './lib/procs.js';
import { Random, sleep } from './lib/random.js';
import { writeResults, type CycleRecord, type RunResult } from './lib/report.js';
import { Serve } from './lib/server.js';
import { LEASE_SECONDS, mismatchedConfig, RunsLog, CLUSTER_PHASE_WEIGHTS, CLUSTER_PHASES, ClusterHarness } from './lib/cluster.js';
import { TextProbe, type TextProbes } from './lib/text-probe.js';
import { Workers } from './lib/workers.js';
import { expectationOf, Injector, STEADY_MIX, type Accepted, type Kind } from './lib/workload.js';

const ONE_CALL_AGENTS = ['thinker', 'ping', 'pong'];
const CEILING = 40_000; // max_tokens_per_thread of chaos/organism/organism.yaml
const DRAIN_DEADLINE_MS = 30_000;
const MAX_DETAILS = 200;

/** Cluster mode's steady mix: also threads of messages injected one after another (FIFO). */
const CLUSTER_MIX = { chain: 70, fail: 6, budget: 10, ordered: 14, ask: 12 } as const;

function options() {
  const { values } = parseArgs({
    options: { cycles: { type: 'string' }, seed: { type: 'string' }, phases: { type: 'string' }, store: { type: 'string' }, text: { type: 'string' } },
    allowPositionals: false,
  });
  const store = values.store ?? process.env['CHAOS_STORE'] ?? 'sqlite';
  if (store !== 'sqlite' && store !== 'postgres') throw new Error(`--store must be sqlite or postgres, not ${store}`);
  const known: readonly string[] = store === 'postgres' ? CLUSTER_PHASES : PHASES;
  const cycles = Number(values.cycles ?? process.env['CHAOS_CYCLES'] ?? 1000);
  if (!Number.isInteger(cycles) || cycles < 1) throw new Error(`--cycles must be a positive integer, not ${values.cycles ?? process.env['CHAOS_CYCLES']}`);
  const seedText = values.seed ?? process.env['CHAOS_SEED'];
  const seed = seedText === undefined ? randomInt(2 ** 31) : Number(seedText);
  if (!Number.isInteger(seed)) throw new Error(`--seed must be an integer, not ${seedText}`);
  const phaseText = values.phases ?? process.env['CHAOS_PHASES'];
  const phases = phaseText
    ? phaseText
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean)
    : [...known];
  const unknown = phases.filter((p) => !known.includes(p));
  if (unknown.length) throw new Error(`unknown phase(s) ${unknown.join(', ')} for --store ${store}; known: ${known.join(', ')}`);
  const text = values.text ?? process.env['CHAOS_TEXT'] ?? 'all';
  if (text !== 'all' && text !== 'kept' && text !== 'off') throw new Error(`--text must be all, kept or off, not ${text}`);
  return { cycles, seed, phases, store: store as 'sqlite' | 'postgres', allPhases: phases.length === known.length, text: text as TextProbes };
}

async function freePort(): Promise<number> {
  const pinned = process.env['CHAOS_PORT'];
  if (pinned) return Number(pinned);
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** A small tmpfs for the data directory, so the disk can be filled; null when we may not mount. */
function mountTmpfs(dir: string): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${Number(process.env['CHAOS_TMPFS_MB'] ?? 2048)}m`, 'chaos', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const total = (counts: Partial<Record<CheckName, number>>) => Object.values(counts).reduce((n, x) => n + x, 0);

function commit(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
    // The results files change during the run itself: not a change of what is tested.
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'chaos', 'test/crash', ':!chaos/results'], { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
    return dirty ? `${sha} (with uncommitted changes)` : sha;
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<number> {
  const opts = options();
  const clusterMode = opts.store === 'postgres';
  // What is tested is what was built at the start: the checkout may move on during a long run.
  const testedCommit = commit();
  const rng = new Random(opts.seed);
  const startedAt = new Date();
  const t0 = performance.now();
  const runDir = mkdtempSync(path.join(os.tmpdir(), 'organism-chaos-'));
  const tmpfsRoot = path.join(runDir, 'disk');
  mkdirSync(tmpfsRoot);
  const mounted = !clusterMode && mountTmpfs(tmpfsRoot);
  const phases = opts.phases.filter((p) => p !== 'disk-full' || mounted);
  const notes: string[] = [];
  if (!mounted && opts.phases.includes('disk-full')) notes.push('disk-full phase skipped: mounting a tmpfs needs root (the data directory is on the ordinary disk)');
  const dataDir = path.join(tmpfsRoot, 'data');
  const effectsDb = path.join(runDir, EFFECTS_FILE);
  const runsFile = path.join(runDir, 'runs.log');
  const hostile = new HostileLlm();
  const hostileUrl = phases.includes('hostile-reply') ? await hostile.start() : 'http://127.0.0.1:9/v1';
  const configPath = path.join(runDir, 'organism.yaml');
  const template = readFileSync(fileURLToPath(new URL('./organism/organism.yaml', import.meta.url)), 'utf8');
  // biome-ignore lint/suspicious/noTemplateCurlyInString: `${NAME}` is the placeholder syntax of chaos/organism/organism.yaml, replaced here
  const config = template.replaceAll('${HOSTILE_BASE_URL}', hostileUrl).replaceAll('${HANDLERS}', fileURLToPath(new URL('./organism/handlers.ts', import.meta.url)));
  writeFileSync(configPath, config);

  const violations: Array<Violation & { cycle: number; phase: string }> = [];
  const counts: Partial<Record<CheckName, number>> = {};
  let phase = 'setup';
  let cycle = 0;
  const printed = new Map<string, number>();
  const report = (check: CheckName, detail: string) => {
    counts[check] = (counts[check] ?? 0) + 1;
    if (violations.filter((v) => v.check === check).length < MAX_DETAILS) violations.push({ check, detail, cycle, phase });
    // The console gets the first few of each check per cycle; the results keep more.
    const key = `${cycle}:${check}`;
    const shown = printed.get(key) ?? 0;
    printed.set(key, shown + 1);
    if (shown < 3) process.stdout.write(`  VIOLATION ${check}: ${detail}\n`);
    else if (shown === 3) process.stdout.write(`  (more ${check} violations in this cycle: see the results)\n`);
  };

  // Cluster mode: a private PostgreSQL server (its restarts must not touch the machine's server).
  let pg: PrivatePostgres | null = null;
  let storeUrl = '';
  if (clusterMode) {
    pg = await startPrivatePostgres();
    pg.psql('CREATE DATABASE chaos');
    storeUrl = pg.urlFor('chaos');
    writeFileSync(runsFile, '');
  }
  const marker = path.basename(runDir);
  const handlerEnv: Record<string, string> = clusterMode ? { CHAOS_RUNS_FILE: runsFile, CHAOS_STORE_URL: storeUrl } : { CHAOS_EFFECTS_DB: effectsDb, CHAOS_DATA_DIR: dataDir };
  const serve = new Serve({
    configPath,
    dataDir,
    port: await freePort(),
    token: randomBytes(24).toString('hex'),
    marker,
    logFile: path.join(runDir, 'serve.log'),
    env: handlerEnv,
    ...(clusterMode ? { extraArgs: ['--store', storeUrl, '--handlers', 'off', '--lease-seconds', String(LEASE_SECONDS)] } : {}),
  });
  const injector = new Injector(serve.api, rng, (check, detail) => report(check as CheckName, detail));
  const probe = new TextProbe(serve.api, injector, rng, report, opts.text);
  const desk = new HumanDesk(serve.api, rng, report);
  const expect = (a: Accepted) => (a.kind === 'ask' ? desk.expectation(a) : expectationOf(a));
  const asksOf = (accepted: readonly Accepted[]) => accepted.filter((a) => a.kind === 'ask' && !harness.quarantined.has(a.threadId));
  if (opts.text !== 'all') notes.push(`text probes: ${opts.text} (not every case the rule covers was sent)`);
  const workers = new Workers({ storeUrl, leaseSeconds: LEASE_SECONDS, marker, logDir: runDir, env: handlerEnv });
  const otherConfigPath = path.join(runDir, 'organism-other.yaml');
  if (clusterMode) writeFileSync(otherConfigPath, mismatchedConfig(config));
  const runs = new RunsLog(runsFile);
  const sqliteHarness = clusterMode ? null : new Harness(serve, injector, rng, report, mounted ? tmpfsRoot : null, dataDir);
  const clusterHarness = clusterMode
    ? new ClusterHarness({
        serve,
        workers,
        pg: pg!,
        injector,
        rng,
        report,
        configPath,
        otherConfigPath,
        runs,
        quiesce: async () => (await injector.stop(), await probe.stop(), await desk.stop()),
      })
    : null;
  const harness = (sqliteHarness ?? clusterHarness)!;
  const weights: Readonly<Record<string, number>> = clusterMode ? CLUSTER_PHASE_WEIGHTS : PHASE_WEIGHTS;
  const mix: Readonly<Record<string, number>> = clusterMode ? CLUSTER_MIX : STEADY_MIX;
  const cycles: CycleRecord[] = [];
  const allAccepted: Accepted[] = [];
  const allOrdered = new Map<string, string[]>();
  /** The 1-minute load average at the start of every cycle (the machine is shared). */
  const loads: number[] = [];
  let fatal: string | null = null;

  let keepData = false;
  const cleanup = () => {
    for (const p of serve.processes()) signal(p.pid, 'SIGKILL');
    pg?.destroy();
    if (mounted) {
      if (keepData) {
        try {
          execFileSync('cp', ['-r', dataDir, path.join(runDir, 'data-copy')], { stdio: 'ignore' });
        } catch {
          // best effort: the report has the details
        }
      }
      try {
        execFileSync('umount', ['-l', tmpfsRoot], { stdio: 'ignore' });
      } catch {
        // already gone
      }
    }
  };
  const checks = checksOf(opts.store);
  /** The results so far; `complete`: the run ended (a stopped run keeps what it found). */
  const snapshot = (complete: boolean): RunResult => ({
    store: opts.store,
    startedAt: startedAt.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    commit: testedCommit,
    machine: `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}`,
    loadAverage: loads,
    seed: opts.seed,
    cyclesPlanned: opts.cycles,
    cyclesRun: cycles.length,
    phases,
    command: `npm run chaos --${clusterMode ? ' --store postgres' : ''} --cycles ${opts.cycles} --seed ${opts.seed}${opts.allPhases ? '' : ` --phases ${opts.phases.join(',')}`}${opts.text === 'all' ? '' : ` --text ${opts.text}`}`,
    faults: { ...harness.faults },
    injects: { ...injector.outcomes },
    accepted: allAccepted.length,
    acceptedByKind: allAccepted.reduce<Record<string, number>>((m, a) => ((m[a.kind] = (m[a.kind] ?? 0) + 1), m), {}),
    asks: { 'asks seen in the inbox': desk.seen, ...desk.counts },
    timings: harness.timings,
    checks: Object.fromEntries(checks.map((k) => [k, counts[k] ?? 0])) as Record<CheckName, number>,
    violations,
    fatal,
    notes: [
      ...notes,
      ...(harness.quarantined.size
        ? [
            `${harness.quarantined.size} threads quarantined (their open deliveries failed by the harness after they froze the server; reported under hostile-reply-bounded, left out of the other checks)`,
          ]
        : []),
      ...[...harness.disabled].map((p) => `phase ${p} switched off during the run`),
    ],
    cycles,
    complete,
    green: complete && fatal === null && Object.values(counts).every((n) => !n) && cycles.length === opts.cycles,
  });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      notes.push(`stopped by ${sig} during cycle ${cycle}`);
      keepData = true;
      cleanup();
      writeResults(snapshot(false));
      process.exit(130);
    });
  }

  process.stdout.write(
    `organism chaos (${opts.store}): ${opts.cycles} cycles, seed ${opts.seed}, phases ${phases.join(',')}, ${clusterMode ? `database ${storeUrl}, lease ${LEASE_SECONDS} s` : `data ${dataDir}${mounted ? ' (tmpfs)' : ''}`}, log ${serve.settings.logFile}\n`,
  );
  try {
    if (clusterHarness) await clusterHarness.startAll();
    else await sqliteHarness!.startServe('the first start');
    const order = rng.shuffle(phases);
    for (cycle = 1; cycle <= opts.cycles; cycle++) {
      const c0 = performance.now();
      const live = phases.filter((p) => !(harness.disabled as Set<string>).has(p));
      if (live.length === 0) throw new Fatal('every selected phase was switched off');
      const draw = () => rng.weighted(Object.fromEntries(live.map((p) => [p, weights[p]!])));
      const mayKillWorker = () => sqliteHarness?.mayKillServerProcess() ?? true;
      let next = order.length ? order.shift()! : draw();
      while ((harness.disabled as Set<string>).has(next)) next = draw();
      while (next === 'kill-worker' && !mayKillWorker() && live.length > 1) next = draw();
      if (next === 'kill-worker' && !mayKillWorker()) await sleep(20_000); // only that phase selected
      phase = next;
      harness.cycle = cycle;
      desk.cycle = cycle;
      injector.begin(cycle);
      injector.context = phase;
      const before = total(counts);
      injector.start(2, () => rng.weighted(mix) as Kind, [10, 40]);
      probe.start();
      desk.start();
      loads.push(os.loadavg()[0]!);
      await sleep(rng.int(150, 400));
      const f0 = performance.now();
      await (clusterHarness ? clusterHarness.run(next as (typeof CLUSTER_PHASES)[number]) : sqliteHarness!.run(next as Phase));
      harness.time('cycle step: the fault until serving again (ms)', performance.now() - f0);
      await sleep(rng.int(100, 250));
      const i0 = performance.now();
      await injector.stop();
      await probe.stop();
      await desk.stop();
      harness.time("cycle step: the injectors' last requests (ms)", performance.now() - i0);
      const s0 = performance.now();
      await settle(serve, report, clusterHarness ? () => restartWorkers(clusterHarness) : () => sqliteHarness!.killGroup(), cycle, () => desk.drain());
      harness.time('cycle step: settle, until the journal is quiet (ms)', performance.now() - s0);
      const k0 = performance.now();
      if (clusterHarness) {
        await clusterHarness.checkWorkers();
        await clusterHarness.checkProcesses(cycle);
      } else await checkProcesses(serve, report, cycle);
      await probe.verify();
      const found = await checkDurability({
        source: apiSource(serve.api),
        effects: clusterHarness
          ? clusterHarness.logChecks(injector.ordered)
          : readEffects(
              effectsDb,
              injector.accepted.map((a) => a.threadId),
            ),
        expectations: injector.accepted.filter((a) => !harness.quarantined.has(a.threadId) && !probe.offScope.has(a.threadId)).map(expect),
        oneCallAgents: ONE_CALL_AGENTS,
        ceiling: () => CEILING,
        orgId: `c${cycle}`,
      });
      for (const v of found) report(v.check as CheckName, `cycle ${cycle} (${phase}): ${v.detail}`);
      await desk.verify(apiSource(serve.api), asksOf(injector.accepted), `cycle ${cycle} (${phase})`);
      harness.time('cycle step: the checks (ms)', performance.now() - k0);
      allAccepted.push(...injector.accepted);
      for (const [t, ids] of injector.ordered) allOrdered.set(t, ids);
      const after = total(counts);
      const record: CycleRecord = { cycle, phase, seconds: (performance.now() - c0) / 1000, accepted: injector.accepted.length, violations: after - before };
      cycles.push(record);
      if (cycle % 10 === 0) writeResults(snapshot(false));
      process.stdout.write(`cycle ${cycle}/${opts.cycles} ${phase}: ${record.seconds.toFixed(1)} s, ${record.accepted} accepted, ${after} violations so far\n`);
    }
    phase = 'final stop';
    if (clusterHarness) await clusterHarness.stopAll();
    else {
      const exited = serve.current!.exited;
      signal(serve.supervisorPid, 'SIGTERM');
      const stop = await Promise.race([exited, sleep(60_000).then(() => null)]);
      if (stop?.code !== 0) report('graceful-stop', `SIGTERM: organism serve ${stop ? `exited with ${stop.signal ?? stop.code}` : 'still running after 60 s'}`);
    }
    await sleep(2_500);
    const left = serve.processes();
    if (left.length) report('no-process-left', `after the final stop: ${left.map((p) => `${p.pid} ${p.cmdline}`).join('; ')}`);
    cleanupProcesses(serve);

    phase = 'final checks';
    /** On the store after the final stop: every ask of the run closed exactly once, none AWAITING. */
    const finalAsks = async (storage: Pick<DurabilitySource, 'journal'>) => {
      const awaiting = (await storage.journal.stats()).counts.AWAITING ?? 0;
      if (awaiting) report('asks-closed-once', `final (on the store): ${awaiting} entries still AWAITING`);
      const asks = asksOf(allAccepted);
      const checked = await desk.verify(storage, asks, 'final (on the store)');
      process.stdout.write(`asks: ${asks.length} threads asked, ${checked} asks checked on the store\n`);
    };
    const expectations = allAccepted.filter((a) => !harness.quarantined.has(a.threadId)).map(expect);
    if (desk.stillOpen) report('asks-closed-once', `after the run: ${desk.stillOpen} asks the harness saw were never closed`);
    if (clusterMode) {
      const storage = await openPostgresStorage({ url: storeUrl });
      try {
        const found = await checkDurability({ source: storage, effects: effectsOf(runs.read()), expectations, oneCallAgents: ONE_CALL_AGENTS, ceiling: () => CEILING });
        for (const v of found) report(v.check as CheckName, `final (on the store): ${v.detail}`);
        await finalAsks(storage);
      } finally {
        await storage.close();
      }
    } else {
      const storage = openSqliteStorage({ dataDir });
      try {
        const found = await checkDurability({ source: storage, effects: readEffects(effectsDb), expectations, oneCallAgents: ONE_CALL_AGENTS, ceiling: () => CEILING });
        for (const v of found) report(v.check as CheckName, `final (on the store): ${v.detail}`);
        await finalAsks(storage);
      } finally {
        storage.close();
      }
    }
  } catch (err) {
    fatal = err instanceof Fatal ? err.message : `${(err as Error).stack ?? err}`;
    process.stdout.write(`FATAL in cycle ${cycle} (${phase}): ${fatal}\n`);
    await injector.stop().catch(() => undefined);
  } finally {
    keepData = fatal !== null || total(counts) > 0;
    cleanup();
    await hostile.stop();
  }

  const result = snapshot(true);
  const written = writeResults(result);
  process.stdout.write(`\n${result.green ? 'GREEN' : 'RED'}: ${cycles.length} cycles in ${result.seconds.toFixed(0)} s, ${total(counts)} violations; ${written.join(', ')}\n`);
  if (result.green) rmSync(runDir, { recursive: true, force: true });
  else process.stdout.write(`run directory kept: ${runDir}\n`);
  return result.green ? 0 : 1;
}

/**
 * Cluster mode's recovery of a stuck journal: both workers stopped gracefully (what they hold is
 * given back) and started again.
 */
async function restartWorkers(h: ClusterHarness): Promise<void> {
  for (const w of [...h.d.workers.live]) {
    signal(w.pid, 'SIGTERM');
    const e = await Promise.race([w.exited, sleep(30_000).then(() => null)]);
    if (!e) {
      h.killed.add(w.pid);
      signal(w.pid, 'SIGKILL');
      await w.exited;
    }
    h.d.workers.forget(w);
  }
  for (let i = 0; i < 2; i++) await h.d.workers.start(h.d.serve.api, h.d.configPath, 60_000);
}

/**
 * Waits until nothing is left to deliver and no ask waits (`drain` closes the open asks, as the
 * people would: asks opened late in the cycle too); a stuck journal is reported, then a restart
 * recovers it.
 */
async function settle(serve: Serve, report: (c: CheckName, d: string) => void, recover: () => Promise<void>, cycle: number, drain: () => Promise<unknown>): Promise<void> {
  const quiet = async (deadlineMs: number) => {
    const t0 = performance.now();
    // Once quiet, drained once more: a decision on an ask whose outcome the fault lost is sent
    // again there (it may have landed, so no ask is open to call drain for); then checked again.
    let lostResent = false;
    while (performance.now() - t0 < deadlineMs) {
      const stats = await serve.api.request('GET', '/api/v1/journal/stats', undefined, 10_000);
      const org = await serve.api.request('GET', '/api/v1/organism', undefined, 10_000);
      if (stats.ok && stats.status === 200 && org.ok && org.status === 200) {
        const c = (stats.body as { counts: Record<string, number> }).counts;
        if (c['PENDING'] === 0 && c['DISPATCHED'] === 0 && (c['AWAITING'] ?? 0) === 0 && (org.body as { activeThreads: number }).activeThreads === 0) {
          if (lostResent) return null;
          await drain();
          lostResent = true;
          continue;
        }
        if ((c['AWAITING'] ?? 0) > 0) await drain();
        if ((c['PENDING'] ?? 0) > 0) await releaseHeld(serve, report, cycle);
      }
      await sleep(50);
    }
    const stats = await serve.api.request('GET', '/api/v1/journal/stats', undefined, 10_000);
    return stats.ok ? JSON.stringify((stats.body as { counts: unknown }).counts) : stats.error;
  };
  const stuck = await quiet(DRAIN_DEADLINE_MS);
  if (stuck === null) return;
  report('journal-drained', `cycle ${cycle}: still not quiet ${DRAIN_DEADLINE_MS / 1000} s after the fault (${stuck}); restarting to recover`);
  await recover();
  const still = await quiet(DRAIN_DEADLINE_MS * 2);
  if (still !== null) throw new Fatal(`the journal did not drain even after a restart: ${still}`);
}

/**
 * A thread the loop breaker held keeps its deliveries PENDING until resumed: each is a false
 * positive of the defaults on this workload (check `never-held`), reported with its rule and
 * evidence, then resumed so that the run goes on.
 */
async function releaseHeld(serve: Serve, report: (c: CheckName, d: string) => void, cycle: number): Promise<void> {
  const held = await serve.api.request('GET', '/api/v1/threads?status=held&limit=50', undefined, 10_000);
  if (!held.ok || held.status !== 200) return;
  for (const t of (held.body as { threads: Array<{ id: string; hold?: { rule?: string; reason?: string; evidence?: unknown } | null }> }).threads) {
    report('never-held', `cycle ${cycle}: thread ${t.id} held by ${t.hold?.rule ?? '?'}: ${t.hold?.reason ?? ''} ${JSON.stringify(t.hold?.evidence ?? null).slice(0, 300)}`);
    await serve.api.request('POST', `/api/v1/threads/${t.id}/resume`, {}, 10_000);
  }
}

/**
 * Exactly the supervisor and one worker (with whatever the worker runs itself, such as the
 * esbuild service that loads TypeScript handlers): anything else was left behind by a fault.
 */
async function checkProcesses(serve: Serve, report: (c: CheckName, d: string) => void, cycle: number): Promise<void> {
  const sup = serve.supervisorPid;
  let problem = '';
  let strays: number[] = [];
  for (let i = 0; i < 40; i++) {
    const procs = serve.processes();
    const byPid = new Map(procs.map((p) => [p.pid, p]));
    const descends = (pid: number): boolean => {
      for (let p = byPid.get(pid); p; p = byPid.get(p.ppid)) if (p.ppid === sup) return true;
      return false;
    };
    const workers = procs.filter((p) => p.ppid === sup && p.cmdline.includes(' serve '));
    const stray = procs.filter((p) => p.pid !== sup && !descends(p.pid));
    strays = stray.map((p) => p.pid);
    problem = [
      ...stray.map((p) => `${p.pid} (parent ${p.ppid}, state ${p.state}): ${p.cmdline}`),
      ...(workers.length === 1 ? [] : [`${workers.length} workers (${workers.map((p) => p.pid).join(', ')})`]),
    ].join('; ');
    if (!problem) return;
    await sleep(100);
  }
  report('no-process-left', `cycle ${cycle}: ${problem}`);
  for (const pid of strays) signal(pid, 'SIGKILL');
}

function cleanupProcesses(serve: Serve): void {
  for (const p of serve.processes()) signal(p.pid, 'SIGKILL');
}

process.exit(await main());
