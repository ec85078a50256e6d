// biome-ignore-all lint/suspicious/noTemplateCurlyInString: organism.yaml substitutions are written in plain strings on purpose.
import { afterEach, describe, expect, it } from 'vitest';
import { BASE_LISTENERS, OPERATOR, organismYaml, startService, type Service } from './fixture.js';

let svc: Service | null = null;
const TOKEN = 'ghp_service0123456789abcdefghijklmnopqr';
afterEach(async () => {
  await svc?.close();
  svc = null;
  delete process.env['SVC_GH_TOKEN'];
  delete process.env['SVC_ORG'];
});

describe('GET /organism/config with ${VAR} substitutions', () => {
  it('shows expanded values in JSON and YAML, a value holding a secret variable never', async () => {
    process.env['SVC_GH_TOKEN'] = TOKEN;
    process.env['SVC_ORG'] = 'acme-corp';
    const yaml = organismYaml(BASE_LISTENERS)
      .replace('Records what it receives', 'Records for ${SVC_ORG}')
      .replace('listeners:\n', 'mcp_servers:\n  - {name: gh, command: "node gh.js --token ${SVC_GH_TOKEN} --org ${SVC_ORG}"}\nlisteners:\n');
    svc = await startService({ yaml });
    const json = await svc.request('GET', '/api/v1/organism/config');
    expect(json.status).toBe(200);
    const text = JSON.stringify(json.body);
    expect(text).not.toContain(TOKEN);
    expect(json.body.mcpServers[0].command).toEqual(['node', 'gh.js', '--token', '[redacted]', '--org', 'acme-corp']);
    expect(json.body.listeners.find((l: { name: string }) => l.name === 'echo').description).toBe('Records for acme-corp');
    // Not JSON, so past the fixture's OpenAPI check.
    const yamlView = await fetch(`${svc.url}/api/v1/organism/config?format=yaml`, { headers: { authorization: `Bearer ${OPERATOR}` } });
    expect(yamlView.status).toBe(200);
    const yamlText = await yamlView.text();
    expect(yamlText).toContain('description: Records for acme-corp');
    expect(yamlText).not.toContain(TOKEN);
  });
});
