/**
 * `npm run bench:compare -- --base <git-ref> [--scenarios pump,scaleout] [--rounds 3]`:
 * measures two versions of organism in one interleaved run (base, head, base, head, ...), so a
 * shared, noisy machine drifts under both alike.
 *
 * - base: a git worktree of <git-ref> in a cache directory outside the repo
 *   ($BENCH_COMPARE_DIR, default the OS temp directory: organism-bench-base-<sha>), reused when
 *   it is already there. Its node_modules is a symlink to this checkout's when its lockfile is
 *   the same or a subset of this one (every package it locks at the same place and version);
 *   otherwise `npm ci` runs there (`--npm-ci` forces it). It is built once (`npm run build`).
 * - head: this checkout, as it is (HEAD with the working tree), built once at the start.
 *
 * Each side runs its own bench harness, from its own directory, in a fresh child process per
 * run: `pump` is `node --import tsx bench/run.ts` with BENCH_ONLY=pump (its results JSON
 * gives every row's per-round samples), `scaleout` is `node --import tsx
 * bench/tools/scaleout.ts` (its JSON gives the handler-bound rounds per worker count and the
 * no-op chain on SQLite and PostgreSQL). The results files a run writes are read, then put
 * back as they were, so neither checkout is left with trial files.
 *
 * Writes bench/results/compare-latest.md and .json (after every run, so a stopped run keeps
 * what it measured): per figure the base and head medians over all samples, their ranges
 * (min-max), head/base, and a verdict: "within noise" when the ranges overlap or head/base is
 * within the run-to-run spread ((max - min) / median of the noisier side).
 *
 * Environment: BENCH_SCALE=quick|full (default full) is passed to both sides; at quick the
 * scale-out runs smaller (SCALEOUT_ROUNDS=1, SCALEOUT_MESSAGES=300, SCALEOUT_PUMP_MESSAGES=2000,
 * SCALEOUT_STEADY_SEC=5) unless those are set. Every other variable (BENCH_TMPDIR, SCALEOUT_*,
 * ORGANISM_BENCH_POSTGRES) passes through unchanged.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// ---------------------------------------------------------------------------------------------
// Arguments

interface Options {
  readonly base: string;
  readonly scenarios: readonly ScenarioKey[];
  readonly rounds: number;
  readonly npmCi: boolean;
  /** Only write the report again from a compare JSON (after a change of the report's format). */
  readonly from: string | null;
}

type ScenarioKey = 'pump' | 'scaleout';
const SCENARIO_KEYS: readonly ScenarioKey[] = ['pump', 'scaleout'];

const USAGE =
  'usage: npm run bench:compare -- --base <git-ref> [--scenarios pump,scaleout] [--rounds 3] [--npm-ci]\n       npm run bench:compare -- --from bench/results/compare-latest.json   (the report again, from its JSON)';

function parseArgs(argv: readonly string[]): Options {
  let base = '';
  let scenarios: ScenarioKey[] = [...SCENARIO_KEYS];
  let rounds = 3;
  let npmCi = false;
  let from: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === '') throw new Error(`${flag} needs a value\n${USAGE}`);
      return v;
    };
    if (flag === '--base') base = value();
    else if (flag === '--scenarios') {
      const list = value()
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const unknown = list.filter((s) => !SCENARIO_KEYS.includes(s as ScenarioKey));
      if (unknown.length || list.length === 0) throw new Error(`--scenarios: unknown ${unknown.join(', ') || '(none given)'}; known: ${SCENARIO_KEYS.join(', ')}`);
      scenarios = list as ScenarioKey[];
    } else if (flag === '--rounds') {
      rounds = Number(value());
      if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds must be a whole number >= 1');
    } else if (flag === '--npm-ci') npmCi = true;
    else if (flag === '--from') from = value();
    else if (flag === '--help' || flag === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else throw new Error(`unknown argument ${arg}\n${USAGE}`);
  }
  if (!base && !from) throw new Error(`--base is required\n${USAGE}`);
  return { base, scenarios, rounds, npmCi, from };
}

// ---------------------------------------------------------------------------------------------
// Small helpers

const HEAD_DIR = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');
const log = (line: string) => process.stdout.write(`${line}\n`);
const load = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    .toString()
    .trim();
const sha256 = (file: string) => (existsSync(file) ? createHash('sha256').update(readFileSync(file)).digest('hex') : 'missing');

function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function fmt(value: number): string {
  if (!Number.isFinite(value)) return '—';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toPrecision(2);
}

function elapsed(seconds: number): string {
  return seconds >= 120 ? `${(seconds / 60).toFixed(1)} min` : `${seconds.toFixed(0)} s`;
}

/** Runs a command to completion with its output on ours (for set-up steps). */
function runVisible(cwd: string, command: string, args: readonly string[]): void {
  log(`  $ (cd ${cwd} && ${command} ${args.join(' ')})`);
  execFileSync(command, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });
}

// ---------------------------------------------------------------------------------------------
// The two checkouts

interface Checkout {
  readonly side: 'base' | 'head';
  readonly dir: string;
  readonly sha: string;
  /** Short sha, subject, and whether the working tree differs (head only). */
  readonly label: string;
  readonly nodeModules: string;
}

interface BaseMarker {
  readonly sha: string;
  readonly lock: string;
  readonly nodeModules: string;
  readonly built: boolean;
}

/** Whether every package base's lockfile pins is pinned at the same place and version in head's. */
export function lockIsSubset(baseLock: string, headLock: string): { ok: boolean; why: string } {
  try {
    const packages = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as { packages?: Record<string, { version?: string; resolved?: string; link?: boolean }> }).packages ?? {};
    const base = packages(baseLock);
    const head = packages(headLock);
    const differ: string[] = [];
    for (const [where, entry] of Object.entries(base)) {
      if (where === '') continue; // the project itself
      const other = head[where];
      if (!other || other.version !== entry.version || Boolean(other.link) !== Boolean(entry.link)) differ.push(`${where}@${entry.version ?? '?'}`);
    }
    return differ.length
      ? { ok: false, why: `${differ.length} package(s) differ, e.g. ${differ.slice(0, 3).join(', ')}` }
      : { ok: true, why: 'every package base locks is locked at the same place and version here' };
  } catch (err) {
    return { ok: false, why: `lockfiles unreadable: ${err instanceof Error ? err.message : String(err)}` };
  }
}

function prepareBase(ref: string, npmCi: boolean): Checkout {
  let sha: string;
  try {
    sha = git(HEAD_DIR, 'rev-parse', '--verify', `${ref}^{commit}`);
  } catch {
    throw new Error(`--base ${ref}: not a commit of this repository`);
  }
  const cache = process.env['BENCH_COMPARE_DIR'] ?? os.tmpdir();
  const dir = path.join(cache, `organism-bench-base-${sha.slice(0, 12)}`);
  const markerFile = path.join(dir, '.organism-bench-base.json');
  git(HEAD_DIR, 'worktree', 'prune');
  const current = existsSync(dir)
    ? (() => {
        try {
          return git(dir, 'rev-parse', 'HEAD');
        } catch {
          return '';
        }
      })()
    : '';
  if (current !== sha) {
    if (existsSync(dir)) {
      log(`  ${dir} is not a worktree of ${sha.slice(0, 12)}: making it again`);
      try {
        git(HEAD_DIR, 'worktree', 'remove', '--force', dir);
      } catch {
        /* not registered */
      }
      rmSync(dir, { recursive: true, force: true });
      git(HEAD_DIR, 'worktree', 'prune');
    }
    mkdirSync(cache, { recursive: true });
    log(`  git worktree add --detach ${dir} ${sha.slice(0, 12)}`);
    git(HEAD_DIR, 'worktree', 'add', '--detach', dir, sha);
  } else {
    log(`  reusing ${dir}`);
  }
  // A base that is kept is never edited: make sure of it (a stray edit would measure something else).
  git(dir, 'reset', '--hard', '--quiet', sha);

  const marker: BaseMarker | null = existsSync(markerFile) ? (JSON.parse(readFileSync(markerFile, 'utf8')) as BaseMarker) : null;
  const baseLock = path.join(dir, 'package-lock.json');
  const headLock = path.join(HEAD_DIR, 'package-lock.json');
  const lockHash = `${sha256(baseLock)}/${sha256(headLock)}`;
  const nm = path.join(dir, 'node_modules');
  let nodeModules: string;
  const haveModules = existsSync(nm);
  if (marker && marker.sha === sha && marker.lock === lockHash && haveModules && !(npmCi && marker.nodeModules !== 'npm ci')) {
    nodeModules = marker.nodeModules;
    log(`  node_modules: kept (${nodeModules})`);
  } else {
    const same = sha256(baseLock) === sha256(headLock);
    const subset = same ? { ok: true, why: 'same lockfile' } : lockIsSubset(baseLock, headLock);
    if (lstatSync(nm, { throwIfNoEntry: false })) rmSync(nm, { recursive: true, force: true });
    if (!npmCi && subset.ok) {
      const target = realpathSync(path.join(HEAD_DIR, 'node_modules'));
      symlinkSync(target, nm, 'dir');
      nodeModules = `symlink to ${target} (${subset.why})`;
      log(`  node_modules: ${nodeModules}`);
    } else {
      log(`  node_modules: npm ci (${npmCi ? '--npm-ci' : subset.why})`);
      runVisible(dir, 'npm', ['ci', '--no-audit', '--no-fund']);
      nodeModules = 'npm ci';
    }
    writeFileSync(markerFile, JSON.stringify({ sha, lock: lockHash, nodeModules, built: false } satisfies BaseMarker));
  }
  const built = marker?.sha === sha && marker.built && marker.lock === lockHash && existsSync(path.join(dir, 'dist'));
  if (!built) {
    runVisible(dir, 'npm', ['run', 'build', '--silent']);
    writeFileSync(markerFile, JSON.stringify({ sha, lock: lockHash, nodeModules, built: true } satisfies BaseMarker));
  } else log('  dist: built before, kept');
  const subject = git(dir, 'log', '-1', '--format=%s', sha);
  return { side: 'base', dir, sha, label: `${sha.slice(0, 12)} (${subject.length > 90 ? `${subject.slice(0, 87)}...` : subject})`, nodeModules };
}

function prepareHead(): Checkout {
  const sha = git(HEAD_DIR, 'rev-parse', 'HEAD');
  const dirty = git(HEAD_DIR, 'status', '--porcelain', '--', 'src', 'bench', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', ':!bench/results');
  const subject = git(HEAD_DIR, 'log', '-1', '--format=%s', sha);
  runVisible(HEAD_DIR, 'npm', ['run', 'build', '--silent']);
  return {
    side: 'head',
    dir: HEAD_DIR,
    sha,
    label: `${sha.slice(0, 12)}${dirty ? ' with uncommitted changes' : ''} (${subject.length > 90 ? `${subject.slice(0, 87)}...` : subject})`,
    nodeModules: 'this checkout',
  };
}

// ---------------------------------------------------------------------------------------------
// Figures: what each scenario's results file says, as named samples

/** higher: more is better (rates, ratios); lower: less is better (latency, CPU). */
type Better = 'higher' | 'lower';

export interface Figure {
  readonly name: string;
  readonly unit: string;
  readonly better: Better;
  readonly samples: readonly number[];
}

const betterFor = (unit: string): Better => (/(ms|µs|us|s)$/.test(unit) && !unit.includes('/') ? 'lower' : 'higher');

class Figures {
  readonly list: Figure[] = [];
  private readonly seen = new Set<string>();
  add(name: string, unit: string, samples: readonly number[], better: Better = betterFor(unit)): void {
    const clean = samples.filter((n) => typeof n === 'number' && Number.isFinite(n));
    if (clean.length === 0) return;
    // A baseline that repeats a row's samples under another name is the same figure: keep the first.
    const key = `${unit}|${clean.join(',')}`;
    if (this.seen.has(key) || this.list.some((f) => f.name === name)) return;
    this.seen.add(key);
    this.list.push({ name, unit, better, samples: clean });
  }
}

interface BenchRow {
  metric: string;
  unit: string;
  rounds?: number[];
  baseline?: { name: string; unit: string; rounds?: number[] } | null;
  target?: { on: 'value' | 'ratio' } | null;
}

/** bench/run.ts's JSON (only-pump.json): every row's per-round samples, its ratio where the target is on the ratio, and the baselines. */
export function pumpFigures(json: unknown): Figure[] {
  const scenarios = (json as { scenarios?: Array<{ scenario: number; rows?: BenchRow[]; skipped?: string }> }).scenarios ?? [];
  const pump = scenarios.find((s) => s.scenario === 2);
  if (!pump) throw new Error('the results file has no scenario 2 (pump)');
  if (pump.skipped) throw new Error(`the pump scenario did not run: ${pump.skipped}`);
  const figures = new Figures();
  // The pump's own figures first, then its CPU per message (the telemetry rows' baselines), then
  // the telemetry rows, then the raw SQLite baselines.
  const rows = pump.rows ?? [];
  const sameRun = (r: BenchRow) => Boolean(r.baseline?.name.includes('(same run)'));
  const addRow = (r: BenchRow) => {
    const rounds = r.rounds ?? [];
    figures.add(r.metric, r.unit, rounds);
    const base = r.baseline?.rounds ?? [];
    if (r.target?.on === 'ratio' && base.length === rounds.length)
      figures.add(
        `${r.metric}: ratio`,
        'x',
        rounds.map((v, i) => v / base[i]!),
        'higher',
      );
  };
  const addBaseline = (r: BenchRow) => r.baseline?.rounds && figures.add(r.baseline.name, r.baseline.unit, r.baseline.rounds);
  rows.filter((r) => !sameRun(r)).forEach(addRow);
  rows.filter(sameRun).forEach(addBaseline);
  rows.filter(sameRun).forEach(addRow);
  for (const r of rows.filter((x) => !sameRun(x))) if (r.baseline?.rounds) figures.add(`Baseline: ${r.baseline.name}`, r.baseline.unit, r.baseline.rounds);
  return figures.list;
}

interface ScaleoutJson {
  handlerBound?: Array<{ workers: number; round: number; messagesPerSec: number }>;
  pump?: Array<{
    store: string;
    throughput: { messagesPerSec: number; cpuMicrosPerMessage: number };
    steady: { firstHopP50Ms: number; firstHopP99Ms: number; endToEndP50Ms: number; endToEndP99Ms: number };
  }>;
}

/** bench/tools/scaleout.ts's JSON: handler-bound msg/s per worker count (and its gain per round), the no-op chain per store. */
export function scaleoutFigures(json: unknown): Figure[] {
  const j = json as ScaleoutJson;
  const figures = new Figures();
  const bound = j.handlerBound ?? [];
  const counts = [...new Set(bound.map((b) => b.workers))];
  for (const n of counts)
    figures.add(
      `Scale-out, handler-bound chain, ${n} worker${n === 1 ? '' : 's'}`,
      'msg/s',
      bound.filter((b) => b.workers === n).map((b) => b.messagesPerSec),
    );
  const first = counts[0];
  for (const n of counts.slice(1)) {
    const gains = bound.filter((b) => b.workers === n).map((b) => b.messagesPerSec / (bound.find((o) => o.round === b.round && o.workers === first)?.messagesPerSec ?? Number.NaN));
    figures.add(`Scale-out, handler-bound chain, ${n} workers vs ${first}`, 'x', gains, 'higher');
  }
  for (const store of [...new Set((j.pump ?? []).map((p) => p.store))]) {
    const mine = (j.pump ?? []).filter((p) => p.store === store);
    const name = store === 'postgres' ? 'PostgreSQL' : store === 'sqlite' ? 'SQLite' : store;
    figures.add(
      `Scale-out, no-op 3-hop chain on ${name}`,
      'msg/s',
      mine.map((p) => p.throughput.messagesPerSec),
    );
    figures.add(
      `Scale-out, no-op chain on ${name}, CPU per message`,
      'µs',
      mine.map((p) => p.throughput.cpuMicrosPerMessage),
    );
    figures.add(
      `Scale-out, ${name} inject-to-ack p50 (steady rate)`,
      'ms',
      mine.map((p) => p.steady.firstHopP50Ms),
    );
    figures.add(
      `Scale-out, ${name} inject-to-ack p99 (steady rate)`,
      'ms',
      mine.map((p) => p.steady.firstHopP99Ms),
    );
    figures.add(
      `Scale-out, ${name} 3 hops p99 (steady rate)`,
      'ms',
      mine.map((p) => p.steady.endToEndP99Ms),
    );
  }
  if (figures.list.length === 0) throw new Error('the scale-out results file holds no figures');
  return figures.list;
}

interface ScenarioSpec {
  readonly key: ScenarioKey;
  readonly title: string;
  /** The file the side needs to run it (relative to the checkout). */
  readonly entry: string;
  readonly env: (scale: string) => Record<string, string>;
  /** Which written results file is this scenario's. */
  readonly resultFile: RegExp;
  readonly figures: (json: unknown) => Figure[];
}

const SCALEOUT_QUICK: Record<string, string> = { SCALEOUT_ROUNDS: '1', SCALEOUT_MESSAGES: '300', SCALEOUT_PUMP_MESSAGES: '2000', SCALEOUT_STEADY_SEC: '5' };

const SPECS: Record<ScenarioKey, ScenarioSpec> = {
  pump: {
    key: 'pump',
    title: 'Pump with the SQLite journal (npm run bench, BENCH_ONLY=pump)',
    entry: 'bench/run.ts',
    env: (scale) => ({ BENCH_ONLY: 'pump', BENCH_SCALE: scale }),
    resultFile: /^only-pump\.json$/,
    figures: pumpFigures,
  },
  scaleout: {
    key: 'scaleout',
    title: 'Scale-out on PostgreSQL (npm run bench:scaleout)',
    entry: 'bench/tools/scaleout.ts',
    env: (scale) => {
      const env: Record<string, string> = {};
      if (scale === 'quick') for (const [k, v] of Object.entries(SCALEOUT_QUICK)) if (process.env[k] === undefined) env[k] = v;
      return env;
    },
    resultFile: /^(only-)?scaleout-.*\.json$/,
    figures: scaleoutFigures,
  },
};

// ---------------------------------------------------------------------------------------------
// One run: a fresh child process in one checkout

export interface Run {
  readonly scenario: ScenarioKey;
  readonly side: 'base' | 'head';
  readonly round: number;
  readonly startedAt: string;
  readonly seconds: number;
  readonly loadBefore: string;
  readonly loadAfter: string;
  readonly figures: readonly Figure[];
  readonly error?: string;
}

type Snapshot = Map<string, { mtimeMs: number; content: Buffer }>;

function snapshot(dir: string): Snapshot {
  const files: Snapshot = new Map();
  if (!existsSync(dir)) return files;
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    const st = statSync(file, { throwIfNoEntry: false });
    if (st?.isFile()) files.set(name, { mtimeMs: st.mtimeMs, content: readFileSync(file) });
  }
  return files;
}

/** The files a run wrote or changed in the results directory; each put back as it was. */
function takeWritten(dir: string, before: Snapshot): Map<string, Buffer> {
  const written = new Map<string, Buffer>();
  if (!existsSync(dir)) return written;
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    const st = statSync(file, { throwIfNoEntry: false });
    if (!st?.isFile()) continue;
    const old = before.get(name);
    if (old && old.mtimeMs === st.mtimeMs) continue;
    written.set(name, readFileSync(file));
    if (old) writeFileSync(file, old.content);
    else unlinkSync(file);
  }
  return written;
}

let current: ReturnType<typeof spawn> | null = null;

function runOnce(spec: ScenarioSpec, checkout: Checkout, round: number, scale: string, logFile: NodeJS.WritableStream): Promise<Run> {
  const startedAt = new Date().toISOString();
  const loadBefore = load();
  const t0 = performance.now();
  const done = (figures: Figure[], error?: string): Run => ({
    scenario: spec.key,
    side: checkout.side,
    round,
    startedAt,
    seconds: (performance.now() - t0) / 1000,
    loadBefore,
    loadAfter: load(),
    figures,
    ...(error ? { error } : {}),
  });
  if (!existsSync(path.join(checkout.dir, spec.entry))) return Promise.resolve(done([], `${checkout.side} has no ${spec.entry}`));
  const resultsDir = path.join(checkout.dir, 'bench', 'results');
  const before = snapshot(resultsDir);
  const tag = `[${spec.key} ${checkout.side} ${round}]`;
  logFile.write(`\n===== ${tag} ${startedAt} in ${checkout.dir}\n`);
  return new Promise<Run>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', spec.entry], {
      cwd: checkout.dir,
      env: { ...process.env, ...spec.env(scale) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    current = child;
    const lines = (prefix: string) => {
      let rest = '';
      return (chunk: Buffer) => {
        logFile.write(chunk);
        rest += chunk.toString();
        const parts = rest.split('\n');
        rest = parts.pop() ?? '';
        for (const line of parts) if (/^\s*(round|==|FAILED)|error/i.test(line)) log(`  ${prefix} ${line.trim()}`);
      };
    };
    let stderr = '';
    child.stdout!.on('data', lines(tag));
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2000);
      lines(`${tag} stderr:`)(chunk);
    });
    child.on('close', (code, signal) => {
      current = null;
      const written = takeWritten(resultsDir, before);
      const name = [...written.keys()].find((n) => spec.resultFile.test(n));
      if (code !== 0 || !name) {
        resolve(done([], `exited ${signal ?? code}${name ? '' : ', no results file'}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`));
        return;
      }
      try {
        resolve(done(spec.figures(JSON.parse(written.get(name)!.toString()))));
      } catch (err) {
        resolve(done([], err instanceof Error ? err.message : String(err)));
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The comparison

interface Side {
  readonly n: number;
  readonly median: number;
  readonly min: number;
  readonly max: number;
  /** (max - min) / median: how far runs of one version wander. */
  readonly spread: number;
  readonly samples: readonly number[];
}

type Verdict = 'within noise' | 'head better beyond noise' | 'head worse beyond noise' | 'too few samples' | 'only on base' | 'only on head';

interface Compared {
  readonly scenario: ScenarioKey;
  readonly figure: string;
  readonly unit: string;
  readonly better: Better;
  readonly base: Side | null;
  readonly head: Side | null;
  readonly ratio: number | null;
  /**
   * Per round, head's median over base's median in the same round (the two runs next to each
   * other in time): how steady head/base is while the machine drifts.
   */
  readonly pairedRatios: readonly number[];
  readonly verdict: Verdict;
}

function side(samples: readonly number[]): Side | null {
  if (samples.length === 0) return null;
  const m = median(samples);
  const min = Math.min(...samples);
  const max = Math.max(...samples);
  return { n: samples.length, median: m, min, max, spread: m ? (max - min) / Math.abs(m) : 0, samples };
}

export function compare(runs: readonly Run[], scenarios: readonly ScenarioKey[]): Compared[] {
  const out: Compared[] = [];
  for (const key of scenarios) {
    const mine = runs.filter((r) => r.scenario === key);
    const names: Array<{ name: string; unit: string; better: Better }> = [];
    for (const r of mine) for (const f of r.figures) if (!names.some((n) => n.name === f.name)) names.push({ name: f.name, unit: f.unit, better: f.better });
    for (const { name, unit, better } of names) {
      const collect = (s: 'base' | 'head') => mine.filter((r) => r.side === s).flatMap((r) => r.figures.find((f) => f.name === name)?.samples ?? []);
      const base = side(collect('base'));
      const head = side(collect('head'));
      let verdict: Verdict;
      let ratio: number | null = null;
      if (!base) verdict = 'only on head';
      else if (!head) verdict = 'only on base';
      else {
        ratio = base.median ? head.median / base.median : null;
        const overlap = base.min <= head.max && head.min <= base.max;
        const noise = Math.max(base.spread, head.spread);
        // One sample a side says nothing about the spread: no verdict (run more rounds).
        if (base.n < 2 || head.n < 2) verdict = overlap ? 'within noise' : 'too few samples';
        else if (overlap || (ratio !== null && Math.abs(ratio - 1) <= noise)) verdict = 'within noise';
        else verdict = (better === 'higher') === head.median > base.median ? 'head better beyond noise' : 'head worse beyond noise';
      }
      const pairedRatios: number[] = [];
      for (const round of [...new Set(mine.map((r) => r.round))]) {
        const m = (s: 'base' | 'head') => median(mine.filter((r) => r.side === s && r.round === round).flatMap((r) => r.figures.find((f) => f.name === name)?.samples ?? []));
        const q = m('head') / m('base');
        if (Number.isFinite(q)) pairedRatios.push(q);
      }
      out.push({ scenario: key, figure: name, unit, better, base, head, ratio, pairedRatios, verdict });
    }
  }
  return out;
}

interface Report {
  readonly command: string;
  readonly startedAt: string;
  readonly finishedAt: string | null;
  readonly complete: boolean;
  readonly scale: string;
  readonly rounds: number;
  readonly machine: string;
  readonly loadBefore: string;
  readonly loadAfter: string;
  readonly base: Checkout;
  readonly head: Checkout;
  readonly runs: readonly Run[];
  readonly figures: readonly Compared[];
}

function markdown(r: Report): string {
  const range = (s: Side | null) => (s ? `${fmt(s.min)}–${fmt(s.max)} (n=${s.n})` : '—');
  const perRun = (key: ScenarioKey, s: 'base' | 'head') => r.runs.filter((x) => x.scenario === key && x.side === s);
  const lines = [
    `# Bench comparison: base ${r.base.sha.slice(0, 12)} vs head ${r.head.sha.slice(0, 12)}`,
    '',
    `Command: \`${r.command}\` (bench/tools/compare.ts), ${r.scale} scale, ${r.rounds} round(s) per side, base and head alternating, each run a fresh process in its own checkout with its own bench code. Started ${r.startedAt}${r.finishedAt ? `, finished ${r.finishedAt}` : ' (not finished)'}.`,
    '',
    `- Base: ${r.base.label}, in ${r.base.dir} (node_modules: ${r.base.nodeModules})`,
    `- Head: ${r.head.label}`,
    `- Machine: ${r.machine}`,
    `- Load average (1, 5, 15 min) before: ${r.loadBefore}; after: ${r.loadAfter}`,
    '',
    'Medians and ranges are over every sample of every run of a side (a run of the pump scenario gives one sample per internal round). "Head/base per round": head\'s median over base\'s in the same round, the two runs next to each other in time. "within noise": the two ranges overlap, or head/base is within the run-to-run spread ((max - min) / median of the noisier side).',
    '',
  ];
  for (const key of [...new Set(r.figures.map((f) => f.scenario)), ...new Set(r.runs.map((x) => x.scenario))].filter((k, i, a) => a.indexOf(k) === i)) {
    const spec = SPECS[key];
    const secs = (s: 'base' | 'head') =>
      perRun(key, s)
        .map((x) => `${x.seconds.toFixed(0)} s`)
        .join(', ') || '—';
    lines.push(`## ${spec.title}`, '', `Runs: base ${secs('base')}; head ${secs('head')}.`, '');
    const failures = r.runs.filter((x) => x.scenario === key && x.error);
    for (const failed of failures) lines.push(`- ${failed.side} round ${failed.round} failed: ${failed.error}`);
    if (failures.length) lines.push('');
    lines.push('| Figure | Unit | Base median | Base range | Head median | Head range | Head/base | Head/base per round | Verdict |', '|---|---|---|---|---|---|---|---|---|');
    for (const f of r.figures.filter((x) => x.scenario === key)) {
      const v = f.verdict === 'within noise' ? f.verdict : `**${f.verdict}**`;
      lines.push(
        `| ${f.figure} | ${f.unit}${f.better === 'lower' ? ' (lower is better)' : ''} | ${f.base ? fmt(f.base.median) : '—'} | ${range(f.base)} | ${f.head ? fmt(f.head.median) : '—'} | ${range(f.head)} | ${f.ratio === null ? '—' : `${f.ratio.toFixed(3)}x`} | ${f.pairedRatios.map((q) => q.toFixed(2)).join(', ') || '—'} | ${v} |`,
      );
    }
    lines.push('');
  }
  const both = r.figures.filter((f) => f.base && f.head);
  const beyond = both.filter((f) => f.verdict.endsWith('beyond noise'));
  const unjudged = both.filter((f) => f.verdict === 'too few samples').length;
  const oneSided = r.figures.length - both.length;
  lines.push(
    `${both.length - beyond.length - unjudged} of ${both.length} figures measured on both sides within noise` +
      `${unjudged ? `; ${unjudged} with too few samples to judge (one a side: run more rounds)` : ''}` +
      `${beyond.length ? `; beyond noise: ${beyond.map((f) => `${f.figure} (${f.verdict.replace(' beyond noise', '')}, ${f.ratio === null ? '—' : `${f.ratio.toFixed(3)}x`})`).join('; ')}` : ''}` +
      `${oneSided ? `; ${oneSided} figure(s) measured on one side only` : ''}.`,
    '',
  );
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  if (options.from) {
    const old = JSON.parse(readFileSync(options.from, 'utf8')) as Report;
    const scenarios = [...new Set(old.runs.map((r) => r.scenario))];
    const report: Report = { ...old, figures: compare(old.runs, scenarios) };
    const dir = path.dirname(path.resolve(options.from));
    const stem = path.basename(options.from).replace(/\.json$/, '');
    writeFileSync(path.join(dir, `${stem}.json`), `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(path.join(dir, `${stem}.md`), markdown(report));
    log(`${markdown(report)}Wrote ${path.join(dir, stem)}.md and .json again.`);
    return;
  }
  const scale = (process.env['BENCH_SCALE'] ?? 'full').toLowerCase();
  if (scale !== 'quick' && scale !== 'full') throw new Error(`BENCH_SCALE must be "full" or "quick", not "${scale}"`);
  const startedAt = new Date().toISOString();
  const machine = `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${process.platform} ${os.release()}, Node ${process.version}`;
  const command = `${scale === 'quick' ? 'BENCH_SCALE=quick ' : ''}npm run bench:compare -- --base ${options.base} --scenarios ${options.scenarios.join(',')} --rounds ${options.rounds}`;
  log(`organism bench comparison, ${scale} scale, ${machine}`);
  log('\n== Base checkout');
  const base = prepareBase(options.base, options.npmCi);
  log('\n== Head checkout');
  const head = prepareHead();
  log(`\nbase ${base.label}\nhead ${head.label}`);

  const resultsDir = path.join(HEAD_DIR, 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const logPath = path.join(os.tmpdir(), `organism-bench-compare-${startedAt.replace(/[:.]/g, '-')}.log`);
  const logFile = createWriteStream(logPath);
  log(`Children's full output: ${logPath}`);

  const loadBefore = load();
  const runs: Run[] = [];
  const write = (complete: boolean) => {
    const report: Report = {
      command,
      startedAt,
      finishedAt: complete ? new Date().toISOString() : null,
      complete,
      scale,
      rounds: options.rounds,
      machine,
      loadBefore,
      loadAfter: load(),
      base,
      head,
      runs,
      figures: compare(runs, options.scenarios),
    };
    const md = markdown(report);
    writeFileSync(path.join(resultsDir, 'compare-latest.json'), `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(path.join(resultsDir, 'compare-latest.md'), md);
    return md;
  };

  for (let round = 1; round <= options.rounds; round++) {
    for (const key of options.scenarios) {
      for (const checkout of [base, head]) {
        log(`\n== ${key}, round ${round}/${options.rounds}, ${checkout.side} (load ${load()})`);
        const run = await runOnce(SPECS[key], checkout, round, scale, logFile);
        runs.push(run);
        log(`  ${run.error ? `FAILED: ${run.error}` : `${run.figures.length} figures`} in ${elapsed(run.seconds)}`);
        write(false);
      }
    }
  }
  const md = write(true);
  logFile.end();
  log(`\n${md}Wrote bench/results/compare-latest.md and .json.`);
}

// Run as a program (not when a test imports the figures and the verdicts).
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (current?.pid) {
        try {
          process.kill(-current.pid, 'SIGTERM');
        } catch {
          /* gone */
        }
      }
      process.exit(130);
    });
  }
  main().catch((err: unknown) => {
    process.stderr.write(`bench:compare: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
