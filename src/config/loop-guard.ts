import type { MapReader } from './reader.js';
import type { ListenerLoopGuard, LoopGuardConfig } from './types.js';

export type { ListenerLoopGuard, LoopGuardConfig } from './types.js';

export const LOOP_GUARD_DEFAULTS: LoopGuardConfig = {
  enabled: true,
  maxRepeats: 20,
  maxCycles: 18,
  maxCycleLength: 4,
  tokensPerMinute: 500_000,
  window: 200,
};

export const LOOP_GUARD_KEYS = ['enabled', 'max_repeats', 'max_cycles', 'max_cycle_length', 'tokens_per_minute', 'window'] as const;
export const LISTENER_LOOP_GUARD_KEYS = ['enabled', 'max_repeats', 'max_cycles', 'tokens_per_minute'] as const;

/** The top-level `loop_guard:` (absent: the defaults). */
export function readLoopGuard(top: MapReader): LoopGuardConfig {
  const r = top.map('loop_guard', LOOP_GUARD_KEYS);
  if (!r) return LOOP_GUARD_DEFAULTS;
  const d = LOOP_GUARD_DEFAULTS;
  const maxCycleLength = r.integer('max_cycle_length', d.maxCycleLength, 1);
  if (maxCycleLength < 2) r.problem('max_cycle_length', '`loop_guard.max_cycle_length` must be at least 2 (A -> B -> A is a cycle of 2 edges)');
  return {
    enabled: r.boolean('enabled', d.enabled),
    maxRepeats: r.integer('max_repeats', d.maxRepeats, 1),
    maxCycles: r.integer('max_cycles', d.maxCycles, 1),
    maxCycleLength: Math.max(2, maxCycleLength),
    tokensPerMinute: r.integer('tokens_per_minute', d.tokensPerMinute, 0),
    window: r.integer('window', d.window, 1),
  };
}

/** A listener's `loop_guard:` (absent: nothing overridden). */
export function readListenerLoopGuard(listener: MapReader): { loopGuard?: ListenerLoopGuard } {
  const r = listener.map('loop_guard', LISTENER_LOOP_GUARD_KEYS);
  if (!r) return {};
  const out: { -readonly [K in keyof ListenerLoopGuard]: ListenerLoopGuard[K] } = {};
  if (r.has('enabled')) out.enabled = r.boolean('enabled', true);
  if (r.has('max_repeats')) out.maxRepeats = r.integer('max_repeats', LOOP_GUARD_DEFAULTS.maxRepeats, 1);
  if (r.has('max_cycles')) out.maxCycles = r.integer('max_cycles', LOOP_GUARD_DEFAULTS.maxCycles, 1);
  if (r.has('tokens_per_minute')) out.tokensPerMinute = r.integer('tokens_per_minute', LOOP_GUARD_DEFAULTS.tokensPerMinute, 0);
  return { loopGuard: out };
}
