import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpServerConfig, ProviderConfig } from '../../src/config/types.js';
import { definePayload } from '../../src/payload/define.js';
import { SYSTEM_ERROR_TYPE } from '../../src/core/message.js';
import { eventually, listener, mockProvider, settled, startOrganism, Text } from '../pump/harness.js';
import { startHttpMcpServer } from './fixtures/mcp-server.js';
import type { Organism } from '../../src/organism/organism.js';

const SERVER_SCRIPT = fileURLToPath(new URL('./fixtures/mcp-server.ts', import.meta.url));
const Report = definePayload('Report', { text: 'string' });

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
});

function stdioServer(marker: string, tools: string[] | null = null): McpServerConfig {
  return { name: 'facts', command: [process.execPath, '--import', 'tsx', SERVER_SCRIPT, marker], url: null, tools, timeoutSeconds: 60 };
}

/** researcher (mock model, tools mode, MCP server `facts`) -> writer. */
async function organismWith(mcp: McpServerConfig, script: ProviderConfig['script'], extra: { maxToolRounds?: number; maxToolCallsPerRound?: number } = {}) {
  const got: unknown[] = [];
  const started = await startOrganism(
    [
      listener('researcher', { handler: null, agent: true, peers: ['writer'], prompt: 'Research, then report.', model: 'mock-1', mcpServers: ['facts'], timeoutSeconds: 120, ...extra }),
      listener('writer', { payload: 'Report', handler: (p) => void got.push(p) }),
    ],
    { llm: { providers: [{ ...mockProvider(), script }], pricing: {} }, mcpServers: [mcp] },
    {},
    [Text, Report],
  );
  cleanup.push(() => started.organism.stop({ timeoutMs: 2_000 }).then(() => undefined));
  return { ...started, got };
}

const lookupThenReport: ProviderConfig['script'] = {
  researcher: [{ calls: [{ name: 'facts_lookup', arguments: { topic: '{{text}}' } }] }, { calls: [{ name: 'send_to_writer', arguments: { text: 'Report: {{result}}' } }] }],
};

/** A stdio server starts as a child process under tsx: slow on a loaded machine. */
async function finished(organism: Organism, threadId: string) {
  return eventually(
    async () => {
      const t = await organism.thread(threadId);
      return t && t.status !== 'active' ? t : null;
    },
    60_000,
    'the thread to settle',
  );
}

async function recorded(organism: Organism, messageId: string) {
  return organism.llmCalls.forMessage(messageId);
}

describe('MCP tools', () => {
  it('stdio: the agent calls a tool of a real MCP server (child process), gets its result and reports it; the call is timed and recorded with the delivery', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcp-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const { organism, got } = await organismWith(stdioServer(path.join(dir, 'cancelled')), lookupThenReport);
    const { threadId, messageId } = await organism.inject('researcher', { text: 'octopuses' });
    expect((await finished(organism, threadId)).status).toBe('completed');
    expect(got).toEqual([{ text: 'Report: Facts about octopuses: it is well documented.' }]);
    const { calls, tools } = await recorded(organism, messageId);
    expect(calls).toHaveLength(2);
    expect(calls[0]!.tools).toEqual(['send_to_writer', 'reply', 'facts_lookup', 'facts_fail', 'facts_slow']);
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({ llmCallId: calls[0]!.id, server: 'facts', tool: 'lookup', arguments: { topic: 'octopuses' }, isError: false, error: null });
    expect(tools[0]!.result).toContain('Facts about octopuses');
    expect(tools[0]!.durationMs).toBeGreaterThan(0);
    // The second call carries the tool result back to the model.
    const second = calls[1]!.request as { messages: Array<{ role: string; content: string }> };
    expect(second.messages.at(-1)).toMatchObject({ role: 'tool', content: 'Facts about octopuses: it is well documented.' });
  }, 120_000);

  it('Streamable HTTP on loopback, with the server’s tool list narrowed by `tools`; a tool error goes back to the model', async () => {
    const http = await startHttpMcpServer();
    cleanup.push(() => http.close());
    const { organism, got } = await organismWith(
      { name: 'facts', command: null, url: http.url, tools: ['lookup', 'fail'], timeoutSeconds: 20 },
      {
        researcher: [{ calls: [{ name: 'facts_fail', arguments: {} }] }, { calls: [{ name: 'send_to_writer', arguments: { text: 'Could not: {{result}}' } }] }],
      },
    );
    const { threadId, messageId } = await organism.inject('researcher', { text: 'x' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(got).toEqual([{ text: 'Could not: the facts database is down' }]);
    expect(http.calls).toEqual(['fail']);
    const { calls, tools } = await recorded(organism, messageId);
    expect(calls[0]!.tools).toEqual(['send_to_writer', 'reply', 'facts_lookup', 'facts_fail']);
    expect(tools[0]).toMatchObject({ tool: 'fail', isError: true, result: 'the facts database is down' });
  });

  it('kill cancels a tool call in flight: the MCP server is told (notifications/cancelled)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mcp-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const marker = path.join(dir, 'cancelled');
    const { organism } = await organismWith(stdioServer(marker), { researcher: [{ calls: [{ name: 'facts_slow', arguments: {} }] }] });
    const { threadId, messageId } = await organism.inject('researcher', { text: 'x' });
    await eventually(() => existsSync(`${marker}.started`), 60_000, 'the tool call to reach the server');
    await organism.killThread(threadId);
    await eventually(() => existsSync(marker), 20_000, 'the server to see the cancellation');
    await eventually(async () => (await recorded(organism, messageId)).tools.length === 1, 10_000, 'the cancelled tool call to be recorded');
    expect((await recorded(organism, messageId)).tools[0]).toMatchObject({ tool: 'slow', isError: true, error: expect.stringContaining('Aborted') });
  }, 120_000);

  it('max_tool_rounds bounds the rounds of tool calls in one delivery (then a SystemError)', async () => {
    const http = await startHttpMcpServer();
    cleanup.push(() => http.close());
    const { organism, events } = await organismWith(
      { name: 'facts', command: null, url: http.url, tools: null, timeoutSeconds: 20 },
      { researcher: [{ calls: [{ name: 'facts_lookup', arguments: { topic: 'again' } }] }] },
      { maxToolRounds: 2 },
    );
    const { threadId } = await organism.inject('researcher', { text: 'x' });
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('error');
    expect(thread.error).toContain('used more than 2 rounds of tool calls (max_tool_rounds)');
    expect(http.calls).toEqual(['lookup', 'lookup']);
    expect(events.some((e) => e.type === 'message' && e.message.payloadType === SYSTEM_ERROR_TYPE && e.message.to === 'api')).toBe(true);
  });
  it("the mock's script: each step once, in order, across deliveries of the thread (a tool round of an earlier delivery counts as a turn)", async () => {
    const http = await startHttpMcpServer();
    cleanup.push(() => http.close());
    const got: unknown[] = [];
    // researcher: 1. looks up (MCP), 2. reports to the writer, 3. once the writer answers, ends.
    const script: ProviderConfig['script'] = {
      researcher: [
        { calls: [{ name: 'facts_lookup', arguments: { topic: '{{text}}' } }] },
        { calls: [{ name: 'send_to_writer', arguments: { text: 'Report: {{result}}' } }] },
        'Thanks, all done.',
      ],
    };
    const { organism } = await startOrganism(
      [
        listener('researcher', { handler: null, agent: true, peers: ['writer'], prompt: 'Research, then report.', model: 'mock-1', mcpServers: ['facts'] }),
        // The writer answers the researcher: a second delivery for it in the same thread.
        listener('writer', { payload: 'Report', handler: (p) => (got.push(p), [{ payloadType: 'Text', payload: { text: 'noted' } }]) }),
      ],
      { llm: { providers: [{ ...mockProvider(), script }], pricing: {} }, mcpServers: [{ name: 'facts', command: null, url: http.url, tools: null, timeoutSeconds: 20 }] },
      {},
      [Text, Report],
    );
    cleanup.push(() => organism.stop({ timeoutMs: 2_000 }).then(() => undefined));
    const { threadId } = await organism.inject('researcher', { text: 'tides' });
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('completed');
    expect(http.calls).toEqual(['lookup']);
    expect(got).toEqual([{ text: 'Report: Facts about tides: it is well documented.' }]);
    // The researcher's answers (the thread's calls come oldest first): steps 1, 2 and 3, each once.
    const { calls } = await organism.llmCalls.forThread(threadId, { limit: 10, offset: 0 });
    const answers = calls.map((c) => c.response?.toolCalls.map((t) => t.name).join(',') || c.response?.text);
    expect(answers).toEqual(['facts_lookup', 'send_to_writer', 'Thanks, all done.']);
  });

  describe('max_tool_calls_per_round', () => {
    const many = (n: number): ProviderConfig['script'] => ({
      researcher: [
        { calls: Array.from({ length: n }, (_, i) => ({ name: 'facts_lookup', arguments: { topic: `t${i}` } })) },
        { calls: [{ name: 'send_to_writer', arguments: { text: 'done' } }] },
      ],
    });

    async function run(n: number, extra: { maxToolCallsPerRound?: number }) {
      const http = await startHttpMcpServer();
      cleanup.push(() => http.close());
      const { organism, got } = await organismWith({ name: 'facts', command: null, url: http.url, tools: null, timeoutSeconds: 20 }, many(n), extra);
      const { threadId, messageId } = await organism.inject('researcher', { text: 'x' });
      const thread = await settled(organism, threadId);
      const { calls } = await recorded(organism, messageId);
      const results = (calls[1]!.request as { messages: Array<{ role: string; content: string }> }).messages.filter((m) => m.role === 'tool');
      return { thread, got, http, results };
    }

    it("runs at most the listener's cap of MCP calls in one round; the rest get an error result the model sees and the turn goes on", async () => {
      const { thread, got, http, results } = await run(10, { maxToolCallsPerRound: 3 });
      expect(thread.status).toBe('completed');
      expect(got).toEqual([{ text: 'done' }]);
      expect(http.calls).toEqual(['lookup', 'lookup', 'lookup']);
      expect(results).toHaveLength(10);
      expect(results.slice(0, 3).every((r) => r.content.startsWith('Facts about t'))).toBe(true);
      for (const r of results.slice(3)) expect(r.content).toContain('Not run: at most 3 tool calls run in one round (max_tool_calls_per_round)');
    });

    it('defaults to 16', async () => {
      const { thread, http, results } = await run(40, {});
      expect(thread.status).toBe('completed');
      expect(http.calls).toHaveLength(16);
      expect(results.filter((r) => r.content.startsWith('Not run'))).toHaveLength(24);
    });
  });
});
