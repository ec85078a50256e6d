import type { Row, ScenarioResult } from './result.js';

const INTEGER_UNITS = new Set(['req/s', 'msg/s', 'rows/s', 'events/s', 'frames/s', 'events', '%']);

/** A figure with its unit, readable in a table. */
export function formatValue(value: number | null, unit: string): string {
  if (value === null || !Number.isFinite(value)) return 'n/a';
  if (INTEGER_UNITS.has(unit)) return `${Math.round(value).toLocaleString('en-US')} ${unit}`;
  const abs = Math.abs(value);
  const text = abs >= 100 ? Math.round(value).toLocaleString('en-US') : abs >= 10 ? value.toFixed(1) : abs >= 1 ? value.toFixed(2) : value.toPrecision(2);
  return `${text} ${unit}`;
}

function formatRatio(ratio: number | null): string {
  if (ratio === null || !Number.isFinite(ratio)) return 'n/a';
  return `${ratio >= 10 ? ratio.toFixed(0) : ratio >= 1 ? ratio.toFixed(2) : ratio.toPrecision(2)}x`;
}

function result(r: Row): string {
  switch (r.status) {
    case 'met':
      return 'met';
    case 'missed':
      return '**missed**';
    case 'info':
      return '—';
    case 'skipped':
      return `skipped${r.note ? `: ${r.note}` : ''}`;
  }
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The results table: one line per row of every scenario. */
export function markdownTable(scenarios: readonly ScenarioResult[]): string {
  const lines = ['| # | Metric | Target | Measured (median) | Baseline, same run (median) | Ratio | Result |', '|---|---|---|---|---|---|---|'];
  for (const s of scenarios) {
    for (const r of s.rows) {
      const baseline = r.baseline ? `${r.baseline.name}: ${formatValue(r.baseline.value, r.baseline.unit)}` : '—';
      lines.push(
        `| ${r.scenario} | ${cell(r.metric)} | ${cell(r.target?.text ?? '—')} | ${formatValue(r.value, r.unit)} | ${cell(baseline)} | ${formatRatio(r.ratio)} | ${cell(result(r))} |`,
      );
    }
  }
  return lines.join('\n');
}

export interface RunInfo {
  readonly scale: string;
  readonly startedAt: string;
  readonly seconds: number;
  readonly machine: string;
  readonly commit: string;
}

/** latest.md: what ran, where, the table, then each scenario's notes. */
export function markdownReport(info: RunInfo, scenarios: readonly ScenarioResult[]): string {
  const counts = { met: 0, missed: 0, skipped: 0 };
  for (const s of scenarios) for (const r of s.rows) if (r.status !== 'info') counts[r.status]++;
  const out = [
    `# Benchmark results (${info.scale} scale)`,
    '',
    `Run ${info.startedAt} on ${info.machine}, commit ${info.commit}, ${Math.round(info.seconds)} s in all. ` +
      `Scale \`${info.scale}\`${info.scale === 'quick' ? ' (BENCH_SCALE=quick: every size scaled down; see the notes)' : ''}. ` +
      `Every figure is the median of the rounds; ratios are against a baseline measured in the same run. ` +
      `Targets: ${counts.met} met, ${counts.missed} missed, ${counts.skipped} skipped.`,
    '',
    markdownTable(scenarios),
    '',
    '## Notes',
    '',
  ];
  for (const s of scenarios) {
    out.push(`**${s.scenario}. ${s.title}** (${Math.round(s.seconds)} s)${s.skipped ? ` — skipped: ${s.skipped}` : ''}`, '');
    for (const n of s.notes) out.push(`- ${n}`);
    out.push('');
  }
  return out.join('\n');
}
