import { median, sig } from './stats.js';

/** A target on the row's absolute value or on its ratio to the same-run baseline. */
export interface Target {
  readonly on: 'value' | 'ratio';
  readonly op: '>=' | '<=';
  readonly threshold: number;
  /** As the issue states it, e.g. ">= 0.6x bare". */
  readonly text: string;
}

/** `info`: a context figure with no target of its own. */
export type Status = 'met' | 'missed' | 'skipped' | 'info';

/** One line of the results table. */
export interface Row {
  readonly scenario: number;
  readonly metric: string;
  readonly unit: string;
  /** Median of the rounds. */
  readonly value: number | null;
  readonly rounds: readonly number[];
  /** What the ratio is taken against, measured in the same run. */
  readonly baseline: { readonly name: string; readonly value: number | null; readonly unit: string; readonly rounds: readonly number[] } | null;
  /** value / baseline.value (for "lower is better" metrics too: it says how many baselines it costs). */
  readonly ratio: number | null;
  readonly target: Target | null;
  readonly status: Status;
  readonly note?: string;
}

export interface ScenarioResult {
  readonly scenario: number;
  readonly title: string;
  readonly rows: readonly Row[];
  /** Absolute figures and settings behind the rows (written to latest.json). */
  readonly context: Record<string, unknown>;
  readonly notes: readonly string[];
  readonly seconds: number;
  readonly skipped?: string;
}

export interface RowInput {
  readonly scenario: number;
  readonly metric: string;
  readonly unit: string;
  readonly rounds: readonly number[];
  readonly baseline?: { readonly name: string; readonly unit: string; readonly rounds: readonly number[] } | null;
  readonly target: Target | null;
  readonly note?: string;
}

/** Builds a row from per-round samples: medians, the ratio, and whether the target holds. */
export function row(input: RowInput): Row {
  const value = input.rounds.length ? median(input.rounds) : null;
  const base = input.baseline
    ? { name: input.baseline.name, unit: input.baseline.unit, rounds: input.baseline.rounds, value: input.baseline.rounds.length ? median(input.baseline.rounds) : null }
    : null;
  const ratio = value !== null && base?.value ? value / base.value : null;
  const subject = input.target?.on === 'ratio' ? ratio : value;
  let status: Status = input.target ? 'skipped' : 'info';
  if (input.target && subject !== null && Number.isFinite(subject)) {
    const ok = input.target.op === '>=' ? subject >= input.target.threshold : subject <= input.target.threshold;
    status = ok ? 'met' : 'missed';
  }
  return {
    scenario: input.scenario,
    metric: input.metric,
    unit: input.unit,
    value: value === null ? null : sig(value, 4),
    rounds: input.rounds.map((r) => sig(r, 4)),
    baseline: base ? { ...base, value: base.value === null ? null : sig(base.value, 4), rounds: base.rounds.map((r) => sig(r, 4)) } : null,
    ratio: ratio === null ? null : sig(ratio, 3),
    target: input.target,
    status,
    ...(input.note ? { note: input.note } : {}),
  };
}

/** A row for a scenario that could not run, saying why. */
export function skippedRow(scenario: number, metric: string, target: Target, why: string): Row {
  return { scenario, metric, unit: '', value: null, rounds: [], baseline: null, ratio: null, target, status: 'skipped', note: why };
}

export const atLeast = (threshold: number, text: string, on: Target['on'] = 'value'): Target => ({ on, op: '>=', threshold, text });
export const atMost = (threshold: number, text: string, on: Target['on'] = 'value'): Target => ({ on, op: '<=', threshold, text });
