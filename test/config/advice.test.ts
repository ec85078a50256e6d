import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { CONFIG_PATH, y } from './helpers.js';

const PROVIDERS = y`
  organism: {name: advice}
  llm:
    providers:
      - name: openai
        type: openai
        api_key_env: ADVICE_OPENAI_KEY
        models: [gpt-4o]
      - name: backup
        type: openai
        base_url: http://127.0.0.1:9/v1
        api_key_env: ADVICE_BACKUP_KEY
        models: [gpt-4o]
        priority: 5
  payloads:
    Question: {fields: {text: string}}
`;

const KEYS = { ADVICE_OPENAI_KEY: 'k1', ADVICE_BACKUP_KEY: 'k2' };

function listener(extra = ''): string {
  return `listeners:\n  - name: assistant\n    handler: builtin:llm\n    prompt: p\n    model: gpt-4o\n    payload: Question\n${extra}`;
}

describe('timeouts and failover', () => {
  it('a listener with a model defaults to its providers whole failover chain plus 30 s; one without a model keeps 30 s', async () => {
    const { config, warnings } = await loadOrganismFromString(`${PROVIDERS}${listener()}  - name: tool\n    handler: ./tools.ts#uppercase\n    payload: Announcement\n`, CONFIG_PATH, {
      env: KEYS,
    });
    // Two providers of 60 s x 4 attempts + (1 + 2 + 4) s backoff each.
    expect(config.listeners[0]!.timeoutSeconds).toBe(2 * 247 + 30);
    expect(config.listeners[1]!.timeoutSeconds).toBe(30);
    expect(warnings).toEqual([]);
  });

  it('the stock provider defaults with one provider give 277 s, so the default listener never cuts its provider short', async () => {
    const yaml = y`
      organism: {name: one}
      llm:
        providers:
          - {name: mock, type: mock}
      payloads:
        Question: {fields: {text: string}}
    `;
    const { config, warnings } = await loadOrganismFromString(`${yaml}${listener()}`, CONFIG_PATH, { env: {} });
    expect(config.listeners[0]!.timeoutSeconds).toBe(277);
    expect(warnings).toEqual([]);
  });

  it('warns of a listener timeout shorter than its providers timeout x attempts, naming file, line, listener, providers and the value to use', async () => {
    const { config, warnings } = await loadOrganismFromString(`${PROVIDERS}${listener('    timeout_seconds: 30\n')}`, CONFIG_PATH, { env: KEYS });
    expect(config.listeners[0]!.timeoutSeconds).toBe(30); // an explicit value is kept
    expect(warnings).toEqual([
      {
        file: CONFIG_PATH,
        line: 22,
        column: 22,
        keyPath: 'listeners[0].timeout_seconds',
        message:
          'listener `assistant` times out after 30 s, before its providers are done: `openai` (llm.providers[0], line 4) may take 60 s x 4 attempts + 7 s backoff = 247 s, ' +
          '`backup` (llm.providers[1], line 8) may take 60 s x 4 attempts + 7 s backoff = 247 s, so failover to `backup` can never happen; ' +
          "set `timeout_seconds` to at least 495 (or remove it: the default is derived from the providers), or lower the providers' `timeout_seconds` or `max_retries`",
      },
    ]);
  });

  it('a single provider whose retries outlast the listener is reported too; a long enough timeout is not', async () => {
    const one = y`
      organism: {name: one}
      llm:
        providers:
          - {name: mock, type: mock, timeout_seconds: 10, max_retries: 0}
      payloads:
        Question: {fields: {text: string}}
    `;
    const short = await loadOrganismFromString(`${one}${listener('    timeout_seconds: 5\n')}`, CONFIG_PATH, { env: {} });
    expect(short.warnings!.map((w) => w.message)).toEqual([
      'listener `assistant` times out after 5 s, before its providers are done: `mock` (llm.providers[0], line 4) may take 10 s x 1 attempt, so its retries are cut short; ' +
        "set `timeout_seconds` to at least 11 (or remove it: the default is derived from the providers), or lower the providers' `timeout_seconds` or `max_retries`",
    ]);
    const enough = await loadOrganismFromString(`${one}${listener('    timeout_seconds: 11\n')}`, CONFIG_PATH, { env: {} });
    expect(enough.warnings).toEqual([]);
  });
});

describe('unset environment variables', () => {
  const WITH_TOKEN = `${PROVIDERS}${listener()}auth:\n  tokens:\n    - {name: ops, role: operator, token_env: ADVICE_OPS_TOKEN}\n`;

  it('warns of every api_key_env and token_env that is unset or empty, naming the variable, its line and what uses it', async () => {
    const { warnings } = await loadOrganismFromString(WITH_TOKEN, CONFIG_PATH, { env: { ADVICE_BACKUP_KEY: '' } });
    expect(warnings!.map((w) => `${w.line}: ${w.keyPath}: ${w.message}`)).toEqual([
      '6: llm.providers[0].api_key_env: environment variable `ADVICE_OPENAI_KEY` is not set (the API key of provider `openai`, used by `assistant`); export it before `organism serve`, which refuses to start without it',
      '11: llm.providers[1].api_key_env: environment variable `ADVICE_BACKUP_KEY` is not set (the API key of provider `backup`, used by `assistant`); export it before `organism serve`, which refuses to start without it',
      '24: auth.tokens[0].token_env: environment variable `ADVICE_OPS_TOKEN` is not set (the operator token `ops`); export it before `organism serve`, which refuses to start without it',
    ]);
    const set = await loadOrganismFromString(WITH_TOKEN, CONFIG_PATH, { env: { ...KEYS, ADVICE_OPS_TOKEN: 't' } });
    expect(set.warnings).toEqual([]);
  });

  it('missingKeys holds the keys of providers a listener calls, not of providers nobody uses', async () => {
    const unused = PROVIDERS.replace('models: [gpt-4o]\n      priority: 5', 'models: [claude]\n      priority: 5');
    const { missingKeys, warnings } = await loadOrganismFromString(`${unused}${listener()}`, CONFIG_PATH, { env: {} });
    expect(missingKeys!.map((p) => `${p.line}: ${p.keyPath}: ${p.message}`)).toEqual([
      '6: llm.providers[0].api_key_env: environment variable `ADVICE_OPENAI_KEY` is not set: it holds the API key of provider `openai`, which `assistant` calls; export it and start again (without it requests would go out with no Authorization)',
    ]);
    expect(warnings!.map((w) => w.message)[1]).toBe(
      'environment variable `ADVICE_BACKUP_KEY` is not set (the API key of provider `backup`, which no listener uses yet); export it before `organism serve` (requests to this provider would carry no key)',
    );
  });
});
