/**
 * chaos/results/latest.json and latest.md (SQLite), latest-postgres.json and .md (the shared
 * mode): the run, every check's result, every violation.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHECKS, type CheckName } from './checks.js';

export interface CycleRecord {
  readonly cycle: number;
  readonly phase: string;
  readonly seconds: number;
  readonly accepted: number;
  readonly violations: number;
}

export interface RunResult {
  readonly store: 'sqlite' | 'postgres';
  readonly startedAt: string;
  readonly seconds: number;
  readonly commit: string;
  readonly machine: string;
  /** The 1-minute load average at the start of each cycle. */
  readonly loadAverage: readonly number[];
  readonly seed: number;
  readonly cyclesPlanned: number;
  readonly cyclesRun: number;
  readonly phases: readonly string[];
  readonly command: string;
  readonly faults: Readonly<Record<string, number>>;
  readonly injects: Readonly<Record<string, number>>;
  readonly accepted: number;
  readonly acceptedByKind: Readonly<Record<string, number>>;
  /** The harness as the people of the human listener: asks seen, and its inbox requests by outcome. */
  readonly asks: Readonly<Record<string, number>>;
  readonly timings: Readonly<Record<string, readonly number[]>>;
  readonly checks: Readonly<Record<CheckName, number>>;
  readonly violations: ReadonlyArray<{ check: string; detail: string; cycle: number; phase: string }>;
  readonly fatal: string | null;
  readonly notes: readonly string[];
  readonly cycles: readonly CycleRecord[];
  /** False while running (written every 10 cycles) or when stopped before the end. */
  readonly complete: boolean;
  readonly green: boolean;
}

const n = (x: number) => x.toLocaleString('en-US');

function summary(values: readonly number[], digits = 0): string {
  if (values.length === 0) return '-';
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const f = (x: number) => x.toFixed(digits);
  return `${sorted.length} times: min ${f(sorted[0]!)}, median ${f(at(0.5))}, p95 ${f(at(0.95))}, max ${f(sorted[sorted.length - 1]!)}`;
}

export function markdown(r: RunResult): string {
  const violationCount = Object.values(r.checks).reduce((a, b) => a + b, 0);
  const lines = [
    `# Chaos run (${r.store === 'postgres' ? 'cluster mode: PostgreSQL, serve --handlers off and two organism workers' : 'SQLite'})`,
    '',
    `**${r.green ? 'GREEN' : r.complete ? 'RED' : violationCount ? 'RED (incomplete)' : 'INCOMPLETE'}**: ${n(r.cyclesRun)} of ${n(r.cyclesPlanned)} cycles, ${n(violationCount)} violations${r.fatal ? `, stopped early: ${r.fatal}` : ''}${r.complete ? '' : ' (the run had not finished when this was written)'}.`,
    '',
    `- Command: \`${r.command}\``,
    `- Seed: ${r.seed} · commit ${r.commit} · started ${r.startedAt} · ${(r.seconds / 60).toFixed(1)} min · ${r.machine}`,
    `- Load average (1 min, sampled at each cycle's start): ${summary(r.loadAverage, 1)}`,
    `- Phases: ${r.phases.join(', ')}`,
    `- Injects: ${n(r.accepted)} accepted (${Object.entries(r.acceptedByKind)
      .map(([k, v]) => `${k} ${n(v)}`)
      .join(', ')}); answers: ${Object.entries(r.injects)
      .map(([k, v]) => `${k} ${n(v)}`)
      .join(', ')}`,
    `- Inbox (the harness answering the human listener): ${Object.entries(r.asks ?? {})
      .map(([k, v]) => `${k} ${n(v)}`)
      .join(', ')}`,
    ...r.notes.map((x) => `- Note: ${x}`),
    '',
    '## Faults',
    '',
    '| Fault | Count |',
    '|---|---|',
    ...Object.entries(r.faults)
      .sort()
      .map(([k, v]) => `| ${k} | ${n(v)} |`),
    '',
    '## Checks',
    '',
    '| Check | What it asserts | Violations |',
    '|---|---|---|',
    ...(Object.keys(r.checks) as CheckName[]).map((k) => `| ${k} | ${CHECKS[k]} | ${r.checks[k] ? `**${n(r.checks[k])}**` : '0'} |`),
    '',
    '## Timings (ms)',
    '',
    `- a whole cycle (ms): ${summary(r.cycles.map((c) => c.seconds * 1000))}`,
    ...Object.entries(r.timings).map(([k, v]) => `- ${k}: ${summary(v)}`),
    '',
  ];
  if (r.violations.length) {
    lines.push('## Violations (the first 200 of each check)', '');
    for (const v of r.violations) lines.push(`- **${v.check}** (cycle ${v.cycle}, ${v.phase}): ${v.detail.replaceAll('\n', ' ')}`);
    lines.push('');
  }
  return `${lines.join('\n')}\n`;
}

export function writeResults(r: RunResult): string[] {
  const dir = fileURLToPath(new URL('../results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const name = r.store === 'postgres' ? 'latest-postgres' : 'latest';
  const json = path.join(dir, `${name}.json`);
  const md = path.join(dir, `${name}.md`);
  writeFileSync(json, `${JSON.stringify(r, null, 2)}\n`);
  writeFileSync(md, markdown(r));
  return [path.relative(process.cwd(), json), path.relative(process.cwd(), md)];
}
