import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR, startService, VIEWER, type Service } from '../service/fixture.js';
import { exposedYaml } from './fixture.js';

async function mcpClient(service: Service, token: string | null): Promise<Client> {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {});
  await client.connect(transport);
  return client;
}

describe('MCP server: exposed listeners as tools at /mcp (issue 31)', () => {
  let service: Service;
  const clients: Client[] = [];
  beforeAll(async () => {
    service = await startService({ yaml: exposedYaml() });
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await service?.close();
  });

  it('refuses a client without a token (401)', async () => {
    await expect(mcpClient(service, null)).rejects.toMatchObject({ code: 401 });
    const res = await fetch(`${service.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('lists only the exposed listeners, with the payload JSON Schema as input schema; a viewer may list', async () => {
    for (const token of [OPERATOR, VIEWER]) {
      const client = await mcpClient(service, token);
      clients.push(client);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['helper']);
      expect(tools[0]).toMatchObject({ description: 'Answers questions', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } });
    }
  });

  it('a viewer cannot call a tool (403)', async () => {
    const client = await mcpClient(service, VIEWER);
    clients.push(client);
    await expect(client.callTool({ name: 'helper', arguments: { text: 'x' } })).rejects.toMatchObject({ code: 403 });
  });

  it('an operator calls a tool: the agent reply is the result, with progress; the call is a thread with usage', async () => {
    const client = await mcpClient(service, OPERATOR);
    clients.push(client);
    const progress: string[] = [];
    const result = await client.callTool({ name: 'helper', arguments: { text: 'life' } }, undefined, { onprogress: (p) => void progress.push(p.message ?? '') });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'The answer to life is 42' }]);
    const structured = result.structuredContent as { payloadType: string; payload: unknown; threadId: string };
    expect(structured).toMatchObject({ payloadType: 'Text', payload: { text: 'The answer to life is 42' } });
    expect(progress).toContain('api -> helper: Text');
    const thread = await service.organism.thread(structured.threadId);
    expect(thread?.participants).toContain('helper');
    expect((await service.organism.threadUsage(structured.threadId))?.totalTokens ?? 0).toBeGreaterThan(0);
  });

  it('a payload that does not fit is a tool error naming the field', async () => {
    const client = await mcpClient(service, OPERATOR);
    clients.push(client);
    const result = await client.callTool({ name: 'helper', arguments: { text: 5 } });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain('INVALID_PAYLOAD');
    expect(JSON.stringify(result.content)).toContain('text');
  });
});
