import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { sanitizedConfigYaml } from '../../src/config/config-yaml.js';
import { CONFIG_PATH, y } from './helpers.js';

describe('interop keys of a listener (issue 31)', () => {
  it('reads expose and a handler: a2a listener with its token_env and max_retries (defaults: not exposed, 3 retries)', async () => {
    const loaded = await loadOrganismFromString(
      y`
        organism: {name: t}
        listeners:
          - name: shout
            handler: ./tools.ts#uppercase
            payload: Announcement
            expose: {a2a: true, mcp: true}
          - name: far
            description: A LangGraph agent
            handler: a2a:https://agents.example.com/a2a/far/
            token_env: FAR_TOKEN
            payload: Announcement
          - name: plain
            handler: ./tools.ts#uppercase
            payload: Announcement
      `,
      CONFIG_PATH,
    );
    const [shout, far, plain] = loaded.config.listeners;
    expect(shout?.expose).toEqual({ a2a: true, mcp: true, a2aPublicCard: false });
    expect(far?.remote).toEqual({ url: 'https://agents.example.com/a2a/far', tokenEnv: 'FAR_TOKEN', maxRetries: 3 });
    expect(loaded.listeners[1]?.handler).toBeNull();
    expect(loaded.listeners[1]?.handlerVersion).toBe('a2a:https://agents.example.com/a2a/far');
    expect(loaded.warnings?.find((w) => w.keyPath === 'listeners[1].token_env')?.message).toBe(
      'environment variable `FAR_TOKEN` is not set (the token of the remote A2A agent `far`); export it before `organism serve`, or its deliveries fail',
    );
    expect(plain?.expose).toBeUndefined();
    expect(plain?.remote).toBeUndefined();
    // The sanitized view (GET /organism/config?format=yaml) keeps them: read back, the same listeners.
    const again = await loadOrganismFromString(sanitizedConfigYaml(loaded.config, {}), CONFIG_PATH);
    expect(again.config.listeners.map((l) => [l.expose, l.remote])).toEqual(loaded.config.listeners.map((l) => [l.expose, l.remote]));
  });
});
