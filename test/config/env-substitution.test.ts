// biome-ignore-all lint/suspicious/noTemplateCurlyInString: organism.yaml substitutions are written in plain strings on purpose.
import { describe, expect, it } from 'vitest';
import { ConfigInvalidError, loadOrganismFromString, sanitizeConfig, sanitizedConfigYaml, type ConfigProblem } from '../../src/config/index.js';
import { fingerprint } from '../../src/config/fingerprint.js';
import { CONFIG_PATH, y } from './helpers.js';

const load = (text: string, env: Record<string, string>) => loadOrganismFromString(text, CONFIG_PATH, { env });

async function problems(text: string, env: Record<string, string>): Promise<ConfigProblem[]> {
  try {
    await load(text, env);
  } catch (err) {
    if (err instanceof ConfigInvalidError) return [...err.problems];
    throw err;
  }
  throw new Error('the config loaded');
}

const config = (listener: string, top = '') => y`
  organism: {name: env-test}
  ${top}
  listeners:
  ${listener}
  payloads:
    Note: {fields: {text: string}}
`;

const listener = (extra = '') => y`
  - name: writer
    description: ${'${WHAT:-Writes notes}'}
    handler: ./tools.ts#uppercase
    payload: Note
    peers:
      - ${'${PEER:-writer2}'}
  ${extra}
  - name: writer2
    handler: ./tools.ts#uppercase
    payload: Note
`;

describe('${VAR} substitution in organism.yaml', () => {
  it('a set variable replaces its reference, inside longer text too; the default applies when unset or empty', async () => {
    const text = config(listener(), 'llm: {providers: [{name: m, type: mock, base_url: "http://${HOST}:${PORT:-9000}/v1"}]}');
    const set = await load(text, { WHAT: 'Drafts replies', HOST: 'llm.internal', PORT: '8081' });
    expect(set.config.listeners[0]!.description).toBe('Drafts replies');
    expect(set.config.llm.providers[0]!.baseUrl).toBe('http://llm.internal:8081/v1');

    const defaults = await load(text, { HOST: 'llm.internal', WHAT: '' });
    expect(defaults.config.listeners[0]!.description).toBe('Writes notes');
    expect(defaults.config.llm.providers[0]!.baseUrl).toBe('http://llm.internal:9000/v1');
  });

  it('expands values at any depth: nested mappings and list items', async () => {
    const text = config(
      listener(),
      'llm: {pricing: {gpt-x: {prompt: 1, completion: 2}}, providers: [{name: m, type: mock, models: ["${MODEL}", fixed], script: {writer: ["Hello ${WHO:-you}"]}}]}',
    );
    const { config: c } = await load(text, { MODEL: 'mock-a', PEER: 'writer2' });
    expect(c.llm.providers[0]!.models).toEqual(['mock-a', 'fixed']);
    expect(c.llm.providers[0]!.script['writer']).toEqual(['Hello you']);
    expect(c.listeners[0]!.peers).toEqual(['writer2']);
  });

  it('an unquoted value that is one substitution takes its YAML type; a quoted one stays a string; values without a reference are untouched', async () => {
    const top = 'max_hops: ${HOPS:-7}\nmax_queue: 500\nmetrics:\n  enabled: ${METRICS:-false}';
    const { config: c } = await load(config(listener(), top), { HOPS: '12' });
    expect(c.maxHops).toBe(12);
    expect(c.maxQueue).toBe(500);
    expect(c.metrics).toEqual({ enabled: false, public: false });

    const quoted = await problems(config(listener(), 'max_hops: "${HOPS}"'), { HOPS: '12' });
    expect(quoted).toEqual([expect.objectContaining({ keyPath: 'max_hops', message: 'expected a positive integer, got "12"' })]);
  });

  it('an unset variable without default is one problem naming the key path and the variable', async () => {
    const found = await problems(config(listener(), 'max_hops: ${HOPS}'), {});
    expect(found).toEqual([
      expect.objectContaining({
        keyPath: 'max_hops',
        line: 2,
        message: 'environment variable `HOPS` is not set and `${HOPS}` has no default; export it, or give a default: `${HOPS:-value}` (write `$${` for a literal `${`)',
      }),
    ]);
    const nested = await problems(config(listener('  model: "${MODEL}"')), {});
    expect(nested.map((p) => [p.keyPath, p.message.slice(0, 40)])).toEqual([['listeners[0].model', 'environment variable `MODEL` is not set ']]);
  });

  it('malformed and unclosed references are problems; $${ is a literal ${', async () => {
    const bad = await problems(config(listener(), 'llm: {providers: [{name: m, type: mock, script: {writer: ["${1X}", "${OPEN"]}}]}'), {});
    expect(bad.map((p) => p.keyPath)).toEqual(['llm.providers[0].script.writer[0]', 'llm.providers[0].script.writer[1]']);
    expect(bad[0]!.message).toContain('malformed substitution `${1X}`');
    expect(bad[1]!.message).toContain('has no closing `}`');

    const text = config(listener(), 'llm: {providers: [{name: m, type: mock, script: {writer: ["Costs $${PRICE} (${CUR:-EUR})"]}}]}');
    const { config: c } = await load(text, { PRICE: 'no' });
    expect(c.llm.providers[0]!.script['writer']).toEqual(['Costs ${PRICE} (EUR)']);
    // The YAML view reads back as the same values: the literal is written escaped again.
    const view = sanitizedConfigYaml(c, {});
    expect(view).toContain('Costs $${PRICE} (EUR)');
    const again = await loadOrganismFromString(view, CONFIG_PATH, { env: { PRICE: 'no' } });
    expect(again.config.llm.providers[0]!.script['writer']).toEqual(['Costs ${PRICE} (EUR)']);
  });

  it('the sanitized view shows expanded values, but never a value a secret variable went into', async () => {
    const token = 'ghp_abcdefghijklmnopqrstuvwxyz012345';
    const top = [
      'mcp_servers:',
      '  - {name: gh, command: "node gh.js --token ${GITHUB_TOKEN} --org ${ORG}"}',
      'llm:',
      '  providers:',
      '    - {name: m, type: mock, base_url: "https://${LLM_HOST}/v1?key=${PASS:-x}", api_key_env: "${KEY_VAR:-MY_KEY}"}',
      '    - {name: o, type: openai, base_url: "https://${MY_KEY}.example.com/v1", models: [gpt-]}',
      'max_tokens_per_thread: ${THREAD_TOKENS:-20000}',
    ].join('\n');
    const text = config(listener(), top);
    // WHAT looks random enough, but is a sentence; THREAD_TOKENS is a number: neither is a secret.
    const env = { GITHUB_TOKEN: token, ORG: 'acme', LLM_HOST: 'llm.acme.dev', MY_KEY: 'short', WHAT: 'Writes For Team42 in Region WestEurope' };
    const loaded = await load(text, env);
    expect(loaded.config.mcpServers![0]!.command).toEqual(['node', 'gh.js', '--token', token, '--org', 'acme']);
    expect(loaded.config.secretVariables).toEqual(['GITHUB_TOKEN', 'KEY_VAR', 'MY_KEY']);

    const view = sanitizeConfig(loaded.config, env) as { mcpServers: Array<{ command: string[] }>; llm: { providers: Array<{ baseUrl: string; apiKeyEnv: string }> } };
    expect(view.mcpServers[0]!.command).toEqual(['node', 'gh.js', '--token', '[redacted]', '--org', 'acme']);
    // Named by api_key_env (through a default), so a secret whatever its name or length.
    expect(view.llm.providers[1]!.baseUrl).toBe('[redacted]');
    expect(view.llm.providers[0]!.baseUrl).toBe('https://llm.acme.dev/v1?key=%5Bredacted%5D');
    expect(view.llm.providers[0]!.apiKeyEnv).toBe('MY_KEY');
    expect(view).toMatchObject({ maxTokensPerThread: 20000, listeners: [{ description: env.WHAT }, {}] });
    const yamlView = sanitizedConfigYaml(loaded.config, env);
    expect(yamlView).toContain('acme');
    expect(yamlView).not.toContain(token);
    expect(yamlView).not.toContain('short.example.com');
  });

  it('a secret substituted into a value that is refused is not echoed by the problem', async () => {
    const secret = 'sk-live-0123456789abcdefABCDEF';
    const found = await problems(config(listener(), 'llm: {providers: [{name: m, type: mock, base_url: "${LLM_API_KEY}"}]}'), { LLM_API_KEY: secret });
    expect(found).toHaveLength(1);
    expect(found[0]!.keyPath).toBe('llm.providers[0].base_url');
    expect(found[0]!.message).not.toContain(secret);
    expect(found[0]!.message).toContain('[redacted]');
  });

  it("the configuration's fingerprint (stored in a cluster's database, named in logs) holds a secret's reference, not its value", async () => {
    const text = config(listener(), 'mcp_servers:\n  - {name: gh, command: "node gh.js --token ${GITHUB_TOKEN}"}');
    const mine = { GITHUB_TOKEN: 'ghp_first0123456789abcdefghijklmnopq' };
    const theirs = { GITHUB_TOKEN: 'ghp_second0123456789abcdefghijklmno' };
    const here = fingerprint((await load(text, mine)).config, mine);
    expect(here.text).not.toContain(mine.GITHUB_TOKEN);
    expect(here.text).toContain('--token","${GITHUB_TOKEN}"');
    expect(fingerprint((await load(text, theirs)).config, theirs).hash).toBe(here.hash);
  });
});
