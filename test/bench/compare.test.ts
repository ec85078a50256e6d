import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compare, lockIsSubset, pumpFigures, scaleoutFigures, type Figure, type Run } from '../../bench/tools/compare.js';

const run = (side: 'base' | 'head', round: number, figures: Figure[]): Run => ({ scenario: 'pump', side, round, startedAt: '', seconds: 1, loadBefore: '', loadAfter: '', figures });
const fig = (samples: number[], unit = 'msg/s'): Figure[] => [{ name: 'rate', unit, better: unit === 'ms' ? 'lower' : 'higher', samples }];

describe('bench:compare', () => {
  it('reads every pump row of a bench results file, ratios where the target is on the ratio, and the baselines once', () => {
    const figures = pumpFigures(JSON.parse(readFileSync(new URL('../../bench/results/latest.json', import.meta.url), 'utf8')));
    const names = figures.map((f) => f.name);
    expect(names[0]).toMatch(/^Journaled 3-hop chain: injected messages/);
    expect(names).toContain('Journaled 3-hop chain vs raw insert rate: ratio');
    expect(names.filter((n) => n.startsWith('Baseline: raw'))).toHaveLength(3);
    expect(new Set(names).size).toBe(names.length);
    expect(figures.every((f) => f.samples.length === 3)).toBe(true);
    expect(figures.find((f) => f.unit === 'ms')?.better).toBe('lower');
  });

  it("puts the telemetry rows after the pump's own, keeping a same-run baseline that repeats a row once", () => {
    const off = { name: 'journaled 3-hop chain, telemetry off (same run)', unit: 'msg/s', rounds: [10, 11] };
    const cpu = { name: 'CPU per message, telemetry off (same run)', unit: 'µs', rounds: [300, 310] };
    const rows = [
      { metric: 'With metrics on, vs off', unit: 'msg/s', rounds: [9, 10], baseline: off, target: { on: 'ratio' } },
      { metric: 'CPU with metrics on, vs off', unit: 'µs', rounds: [320, 330], baseline: cpu, target: null },
      { metric: 'Journaled chain', unit: 'msg/s', rounds: [10, 11], baseline: { name: 'raw insert', unit: 'rows/s', rounds: [100, 120] }, target: { on: 'value' } },
    ];
    const names = pumpFigures({ scenarios: [{ scenario: 2, rows }] }).map((f) => f.name);
    expect(names).toEqual([
      'Journaled chain',
      'CPU per message, telemetry off (same run)',
      'With metrics on, vs off',
      'With metrics on, vs off: ratio',
      'CPU with metrics on, vs off',
      'Baseline: raw insert',
    ]);
  });

  it('reads the scale-out results: msg/s per worker count, the gain per round, and the no-op chain per store', () => {
    const figures = scaleoutFigures(JSON.parse(readFileSync(new URL('../../bench/results/scaleout-2026-11-26.json', import.meta.url), 'utf8')));
    const byName = new Map(figures.map((f) => [f.name, f]));
    expect(byName.get('Scale-out, handler-bound chain, 1 worker')?.samples).toHaveLength(2);
    expect(byName.get('Scale-out, handler-bound chain, 4 workers vs 1')?.unit).toBe('x');
    expect(byName.get('Scale-out, no-op 3-hop chain on PostgreSQL')?.better).toBe('higher');
    expect(byName.get('Scale-out, PostgreSQL inject-to-ack p99 (steady rate)')?.better).toBe('lower');
  });

  it('calls a figure within noise when the ranges overlap or the ratio is within the spread, and says which way otherwise', () => {
    const within = compare([run('base', 1, fig([100, 110])), run('head', 1, fig([105, 120]))], ['pump'])[0]!;
    expect(within.verdict).toBe('within noise');
    const spread = compare([run('base', 1, fig([100, 150])), run('head', 1, fig([160, 161]))], ['pump'])[0]!;
    expect(spread.verdict).toBe('within noise'); // 1.28x against a 0.4 spread on base
    const worse = compare([run('base', 1, fig([100, 101])), run('head', 1, fig([80, 81]))], ['pump'])[0]!;
    expect(worse.verdict).toBe('head worse beyond noise');
    expect(worse.ratio).toBeCloseTo(0.8, 2);
    const slower = compare([run('base', 1, fig([10, 10.1], 'ms')), run('head', 1, fig([8, 8.1], 'ms'))], ['pump'])[0]!;
    expect(slower.verdict).toBe('head better beyond noise');
    expect(compare([run('base', 1, fig([1]))], ['pump'])[0]!.verdict).toBe('only on base');
    expect(compare([run('base', 1, fig([100])), run('head', 1, fig([90]))], ['pump'])[0]!.verdict).toBe('too few samples');
    const paired = compare([run('base', 1, fig([100, 102])), run('head', 1, fig([110, 112])), run('base', 2, fig([50])), run('head', 2, fig([55]))], ['pump'])[0]!;
    expect(paired.pairedRatios.map((q) => q.toFixed(2))).toEqual(['1.10', '1.10']);
  });

  it('links the base to this node_modules only when every package it locks is locked here at the same place and version', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-compare-lock-'));
    try {
      const lock = (name: string, packages: Record<string, { version: string }>) => {
        const file = path.join(dir, name);
        writeFileSync(file, JSON.stringify({ lockfileVersion: 3, packages: { '': { name: 'organism' }, ...packages } }));
        return file;
      };
      const head = lock('head.json', { 'node_modules/a': { version: '1.0.0' }, 'node_modules/b': { version: '2.0.0' } });
      expect(lockIsSubset(lock('sub.json', { 'node_modules/a': { version: '1.0.0' } }), head).ok).toBe(true);
      expect(lockIsSubset(lock('older.json', { 'node_modules/a': { version: '0.9.0' } }), head)).toMatchObject({ ok: false });
      expect(lockIsSubset(lock('other.json', { 'node_modules/c': { version: '1.0.0' } }), head).ok).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
