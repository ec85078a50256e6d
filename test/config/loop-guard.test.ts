import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { LOOP_GUARD_DEFAULTS } from '../../src/config/loop-guard.js';
import { sanitizeConfig } from '../../src/config/sanitize.js';
import { CONFIG_PATH, problemsOf, y } from './helpers.js';

const config = (top: string, listener = '') => y`
  organism: {name: t}
${top}
  listeners:
    - name: shout
      handler: ./tools.ts#uppercase
      payload: Announcement
${listener}
`;

const problems = async (top: string, listener = '') => (await problemsOf(config(top, listener))).map((p) => [p.keyPath, p.message]);

describe('loop_guard:', () => {
  it('is on by default with conservative limits', async () => {
    const loaded = await loadOrganismFromString(config(''), CONFIG_PATH);
    expect(loaded.config.loopGuard).toEqual(LOOP_GUARD_DEFAULTS);
    expect(LOOP_GUARD_DEFAULTS).toEqual({ enabled: true, maxRepeats: 20, maxCycles: 18, maxCycleLength: 4, tokensPerMinute: 500_000, window: 200 });
    expect(loaded.config.listeners[0]).not.toHaveProperty('loopGuard');
  });

  it('loads the organism-wide limits and a listener override, and shows them in the sanitized config', async () => {
    const loaded = await loadOrganismFromString(
      config('  loop_guard: {max_repeats: 5, max_cycles: 3, tokens_per_minute: 0, window: 50, max_cycle_length: 3}', '      loop_guard: {max_cycles: 8, enabled: false}'),
      CONFIG_PATH,
    );
    expect(loaded.config.loopGuard).toEqual({ enabled: true, maxRepeats: 5, maxCycles: 3, maxCycleLength: 3, tokensPerMinute: 0, window: 50 });
    expect(loaded.config.listeners[0]!.loopGuard).toEqual({ maxCycles: 8, enabled: false });
    const sanitized = sanitizeConfig(loaded.config) as { loopGuard: unknown; listeners: Array<Record<string, unknown>> };
    expect(sanitized.loopGuard).toEqual(loaded.config.loopGuard);
    expect(sanitized.listeners[0]!['loopGuard']).toEqual({ maxCycles: 8, enabled: false });
  });

  it('refuses bad values at their key path', async () => {
    expect(await problems('  loop_guard: {max_repeats: 0}')).toEqual([['loop_guard.max_repeats', expect.stringContaining('positive integer')]]);
    expect(await problems('  loop_guard: {tokens_per_minute: -5}')).toEqual([['loop_guard.tokens_per_minute', expect.stringContaining('non-negative')]]);
    expect(await problems('  loop_guard: {max_cycle_length: 1}')).toEqual([['loop_guard.max_cycle_length', expect.stringContaining('at least 2')]]);
    expect(await problems('  loop_guard: {enabled: yes please}')).toEqual([['loop_guard.enabled', expect.stringContaining('true or false')]]);
    expect(await problems('  loop_guard: {max_repeat: 3}')).toEqual([['loop_guard.max_repeat', expect.stringContaining('did you mean `max_repeats`?')]]);
    expect(await problems('', '      loop_guard: {window: 3}')).toEqual([['listeners[0].loop_guard.window', expect.stringContaining('unknown key `window`')]]);
    expect(await problems('', '      loop_guard: {max_cycles: 1.5}')).toEqual([['listeners[0].loop_guard.max_cycles', expect.stringContaining('positive integer')]]);
  });
});
