import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { sanitizeConfig } from '../../src/config/sanitize.js';
import { CONFIG_PATH, problemsOf, y } from './helpers.js';

/** shout (the listener under test, with `extra` keys, one a line) and desk, which takes SystemErrors when `deskPayload` says so. */
const config = (extra: string, deskPayload = '[Announcement, SystemError]') => y`
  organism: {name: t}
  listeners:
    - name: shout
      handler: ./tools.ts#uppercase
      payload: Announcement
${extra
  .split('\n')
  .map((l, i) => (i === 0 ? l : l.replace(/^ {6}/, '    ')))
  .join('\n')}
    - name: desk
      handler: ./tools.ts#uppercase
      payload: ${deskPayload}
`;

const problems = async (extra: string, deskPayload?: string) => (await problemsOf(config(extra, deskPayload))).map((p) => [p.keyPath, p.message]);

describe('listener retry:', () => {
  it('loads the policy with its defaults; absent, a listener has none', async () => {
    const loaded = await loadOrganismFromString(config('      retry: {max_attempts: 4, initial_seconds: 0.5}'), CONFIG_PATH);
    const [shout, desk] = loaded.config.listeners;
    expect(shout!.retry).toEqual({ maxAttempts: 4, backoff: 'exponential', initialSeconds: 0.5, maxSeconds: 300 });
    expect(desk).not.toHaveProperty('retry');
    expect((sanitizeConfig(loaded.config) as { listeners: Array<Record<string, unknown>> }).listeners[0]!['retry']).toEqual(shout!.retry);
  });

  it('refuses bad values at their key path', async () => {
    expect(await problems('      retry: {max_attempts: 0}')).toEqual([['listeners[0].retry.max_attempts', expect.stringContaining('positive integer')]]);
    expect(await problems('      retry: {backoff: linear}')).toEqual([['listeners[0].retry.backoff', expect.stringContaining('exponential')]]);
    expect(await problems('      retry: {initial_seconds: -1}')).toEqual([['listeners[0].retry.initial_seconds', expect.stringContaining('non-negative')]]);
    expect(await problems('      retry: {initial_seconds: 10, max_seconds: 5}')).toEqual([
      ['listeners[0].retry.max_seconds', '`retry.max_seconds` (5) is less than `retry.initial_seconds` (10)'],
    ]);
    expect(await problems('      retry: {max_attempt: 3}')).toEqual([['listeners[0].retry.max_attempt', expect.stringContaining('did you mean `max_attempts`?')]]);
    expect(await problems('      retry: 3')).toEqual([['listeners[0].retry', expect.stringContaining('mapping')]]);
  });
});

describe('listener on_error:', () => {
  it('loads a peer that accepts SystemError', async () => {
    const loaded = await loadOrganismFromString(config('      peers: [desk]\n      on_error: desk'), CONFIG_PATH);
    expect(loaded.config.listeners[0]!.onError).toBe('desk');
  });

  it('refuses an unknown listener, one that is not a peer, one that does not take SystemError, and the listener itself', async () => {
    expect(await problems('      peers: [desk]\n      on_error: dsk')).toEqual([['listeners[0].on_error', expect.stringContaining('did you mean `desk`?')]]);
    expect(await problems('      on_error: desk')).toEqual([['listeners[0].on_error', expect.stringContaining('is not a peer of `shout`: add it to `peers`')]]);
    expect(await problems('      peers: [desk]\n      on_error: desk', 'Announcement')).toEqual([['listeners[0].on_error', expect.stringContaining('does not accept SystemError')]]);
    expect(await problems('      on_error: shout')).toEqual([['listeners[0].on_error', expect.stringContaining('names the listener itself')]]);
  });
});
