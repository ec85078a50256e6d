import { afterEach, describe, expect, it } from 'vitest';
import type { ProviderConfig } from '../../src/config/types.js';
import { Errors } from '../../src/errors/catalogue.js';
import type { OrganismEvent } from '../../src/events/types.js';
import { definePayload } from '../../src/payload/define.js';
import { SYSTEM_ERROR_TYPE } from '../../src/core/message.js';
import { anthropicOk, startAnthropicServer } from '../llm/servers/anthropic-server.js';
import { openAiOk, startOpenAiServer } from '../llm/servers/openai-server.js';
import type { ScriptedServer } from '../llm/servers/scripted-server.js';
import { eventually, listener, mockProvider, settled, startOrganism, Text } from '../pump/harness.js';

const Task = definePayload('Task', { goal: 'string', priority: 'integer?' }, { description: 'Work to do' });
const servers: ScriptedServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
  delete process.env['TOOL_TEST_KEY'];
});

async function track(s: Promise<ScriptedServer>): Promise<ScriptedServer> {
  const server = await s;
  servers.push(server);
  return server;
}

function provider(type: 'openai' | 'anthropic', url: string, extra: Partial<ProviderConfig> = {}): ProviderConfig {
  return { ...mockProvider(), name: type, type, baseUrl: url, maxRetries: 0, ...extra };
}

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) });

/** boss (LLM agent, peer: worker) -> worker (collects Tasks); `secret` exists but is no peer of boss. */
async function organismWith(p: ProviderConfig, got: unknown[], secretGot: unknown[] = []) {
  return startOrganism(
    [
      listener('boss', { handler: null, agent: true, peers: ['worker'], prompt: 'You delegate work.', model: 'gpt-4o', description: 'the boss' }),
      listener('worker', { payload: 'Task', description: 'does tasks', handler: (payload) => void got.push(payload) }),
      listener('secret', { payload: 'Task', description: 'TOP SECRET listener', handler: (payload) => void secretGot.push(payload) }),
    ],
    { llm: { providers: [p], pricing: {} } },
    {},
    [Text, Task],
  );
}

type Body = { messages: Array<Record<string, unknown>>; tools?: Array<Record<string, unknown>> };

describe('tools mode, OpenAI Chat Completions', () => {
  it('offers one tool per declared peer plus reply (never another listener), and a tool call becomes the message', async () => {
    const s = await track(startOpenAiServer({ replies: [{ body: openAiOk(null, {}, 'gpt-4o', [call('call_1', 'send_to_worker', { goal: 'count sheep', priority: 2 })]) }] }));
    const got: unknown[] = [];
    const { organism } = await organismWith(provider('openai', s.url), got);
    const { threadId } = await organism.inject('boss', { text: 'please help' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(got).toEqual([{ goal: 'count sheep', priority: 2 }]);
    expect(s.seen).toHaveLength(1); // an answer of valid messages only needs no further round
    const body = s.seen[0]!.body as Body;
    expect(body.tools!.map((t) => (t['function'] as { name: string }).name)).toEqual(['send_to_worker', 'reply']);
    const sendTool = body.tools![0]!['function'] as { description: string; parameters: Record<string, unknown> };
    expect(sendTool.description).toContain('does tasks');
    expect(sendTool.description).toContain('Task payload (Work to do)');
    expect(sendTool.parameters).toMatchObject({ type: 'object', properties: { goal: { type: 'string' } }, required: ['goal'] });
    expect(sendTool.parameters).not.toHaveProperty('$schema');
    const text = JSON.stringify(body);
    expect(text).not.toContain('secret');
    expect(text).not.toContain('TOP SECRET');
    expect(body.messages[0]).toMatchObject({ role: 'system' });
    expect(String(body.messages.at(-1)!['content'])).toContain('{"text":"please help"}');
  });

  it('parallel tool calls become several messages', async () => {
    const s = await track(
      startOpenAiServer({
        replies: [{ body: openAiOk('Two tasks.', {}, 'gpt-4o', [call('c1', 'send_to_worker', { goal: 'one' }), call('c2', 'send_to_worker', { goal: 'two' })]) }],
      }),
    );
    const got: unknown[] = [];
    const { organism } = await organismWith(provider('openai', s.url), got);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    await settled(organism, threadId);
    expect(got).toEqual([{ goal: 'one' }, { goal: 'two' }]);
  });

  it('a call of a tool that is not a peer is refused and told to the model; the repaired answer goes out, nothing reaches the other listener', async () => {
    const s = await track(
      startOpenAiServer({
        replies: [
          { body: openAiOk(null, {}, 'gpt-4o', [call('c1', 'send_to_secret', { goal: 'leak' })]) },
          { body: openAiOk(null, {}, 'gpt-4o', [call('c2', 'send_to_worker', { goal: 'proper' })]) },
        ],
      }),
    );
    const got: unknown[] = [];
    const secretGot: unknown[] = [];
    const { organism } = await organismWith(provider('openai', s.url), got, secretGot);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(got).toEqual([{ goal: 'proper' }]);
    expect(secretGot).toEqual([]);
    const repair = s.seen[1]!.body as Body;
    // The model's call and its refusal are in the conversation as the API wants them.
    expect(repair.messages.at(-2)).toMatchObject({ role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'send_to_secret' } }] });
    expect(repair.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'c1' });
    expect(String(repair.messages.at(-1)!['content'])).toContain('send_to_secret: not one of your tools (send_to_worker, reply)');
    const recorded = await organism.llmCalls.forThread(threadId, { limit: 10, offset: 0 });
    expect(recorded.calls.map((c) => c.repair)).toEqual([false, true]);
  });

  it('malformed arguments get one repair round with the field errors; a second bad answer fails with a SystemError', async () => {
    const s = await track(
      startOpenAiServer({
        replies: [
          { body: openAiOk(null, {}, 'gpt-4o', [call('c1', 'send_to_worker', '{"goal": "x", "priority": ')]) },
          { body: openAiOk(null, {}, 'gpt-4o', [call('c2', 'send_to_worker', { priority: 'high' })]) },
        ],
      }),
    );
    const got: unknown[] = [];
    const { organism, events } = await organismWith(provider('openai', s.url), got);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    const thread = await settled(organism, threadId);
    expect(s.seen).toHaveLength(2);
    expect(String((s.seen[1]!.body as Body).messages.at(-1)!['content'])).toContain('send_to_worker: the arguments are not valid JSON');
    expect(thread.status).toBe('error');
    expect(thread.error).toContain('send_to_worker: goal: required field missing');
    expect(thread.error).toContain('send_to_worker: priority: expected integer, got string "high"');
    expect(got).toEqual([]);
    expect(events.some((e) => e.type === 'message' && e.message.to === 'api' && e.message.payloadType === SYSTEM_ERROR_TYPE)).toBe(true);
  });

  it('repaired arguments go out after the one repair round', async () => {
    const s = await track(
      startOpenAiServer({
        replies: [
          { body: openAiOk(null, {}, 'gpt-4o', [call('c1', 'send_to_worker', { goal: 'x', priority: 'high' })]) },
          { body: openAiOk(null, {}, 'gpt-4o', [call('c2', 'send_to_worker', { goal: 'x', priority: 1 })]) },
        ],
      }),
    );
    const got: unknown[] = [];
    const { organism } = await organismWith(provider('openai', s.url), got);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(got).toEqual([{ goal: 'x', priority: 1 }]);
    expect(String((s.seen[1]!.body as Body).messages.at(-1)!['content'])).toContain('priority: expected integer, got string "high"');
  });

  it('the reply caps hold in tools mode: too many calls in one answer are refused whole for the repair round; an oversized answer fails at once', async () => {
    const s = await track(
      startOpenAiServer({
        replies: [
          { body: openAiOk(null, {}, 'gpt-4o', [call('c1', 'send_to_worker', { goal: 'one' }), call('c2', 'send_to_worker', { goal: 'two' })]) },
          { body: openAiOk(null, {}, 'gpt-4o', [call('c3', 'send_to_worker', { goal: 'only' })]) },
          { body: openAiOk('x'.repeat(300), {}, 'gpt-4o') },
        ],
      }),
    );
    const got: unknown[] = [];
    const { organism } = await startOrganism(
      [
        listener('boss', { handler: null, agent: true, peers: ['worker'], prompt: 'p', model: 'gpt-4o', maxMessagesPerReply: 1 }),
        listener('worker', { payload: 'Task', handler: (payload) => void got.push(payload) }),
      ],
      { llm: { providers: [provider('openai', s.url)], pricing: {}, maxReplyBytes: 200, maxMessagesPerReply: 20 } },
      {},
      [Text, Task],
    );
    const first = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, first.threadId)).status).toBe('completed');
    expect(got).toEqual([{ goal: 'only' }]);
    expect(String((s.seen[1]!.body as Body).messages.at(-1)!['content'])).toContain('the answer sends 2 messages; at most 1 are allowed in one reply');
    const second = await organism.inject('boss', { text: 'again' });
    const thread = await settled(organism, second.threadId);
    expect(thread.status).toBe('error');
    expect(thread.error).toContain(Errors.LLM_REPLY_TOO_LARGE('boss', 300, 200).detail);
  });

  it('streams with usage from the final chunk; text deltas are published as llm_delta events with the recorded call id', async () => {
    const s = await track(startOpenAiServer({ replies: [{ body: openAiOk('Thinking it over, nothing to send.', { prompt_tokens: 321, completion_tokens: 12, total_tokens: 333 }) }] }));
    const { organism, events } = await organismWith(provider('openai', s.url), []);
    const { threadId, messageId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(s.seen[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const deltas = events.filter((e): e is Extract<OrganismEvent, { type: 'llm_delta' }> => e.type === 'llm_delta');
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.map((d) => d.text).join('')).toBe('Thinking it over, nothing to send.');
    const { calls } = await organism.llmCalls.forMessage(messageId);
    expect(calls).toHaveLength(1);
    expect(deltas.every((d) => d.threadId === threadId && d.messageId === messageId && d.agent === 'boss' && d.callId === calls[0]!.id)).toBe(true);
    expect(calls[0]!.usage).toMatchObject({ promptTokens: 321, completionTokens: 12, totalTokens: 333 });
    const usage = events.find((e) => e.type === 'usage');
    expect(usage).toMatchObject({ usage: { promptTokens: 321, completionTokens: 12 } });
  });

  it('an answer that is not a chat completion is the provider’s bad response, not the agent’s invalid reply', async () => {
    const s = await track(startOpenAiServer({ streams: false, replies: [{ body: { foo: 1 } }] }));
    const { organism } = await organismWith(provider('openai', s.url), []);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('error');
    expect(thread.error).toContain(Errors.LLM_BAD_RESPONSE('not a chat completion ({"foo":1})').detail);
    expect(thread.error).not.toContain('invalid reply');
  });

  it('a stream of chunks that are not chat completion chunks is a bad response too', async () => {
    const s = await track(startOpenAiServer({ replies: [{ events: [{ data: { foo: 1 } }, { data: '[DONE]' }] }] }));
    const { organism } = await organismWith(provider('openai', s.url), []);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).error).toContain('unreadable response: not a chat completion chunk');
  });

  it('records the request as sent (never the key), the answer, usage, cost and latency; metadata mode keeps no prompt or answer', async () => {
    process.env['TOOL_TEST_KEY'] = 'sk-tool-test-secret-999';
    const reply = { body: openAiOk('done', {}, 'gpt-4o', [call('c1', 'send_to_worker', { goal: 'g' })]) };
    const s = await track(startOpenAiServer({ key: 'sk-tool-test-secret-999', replies: [reply] }));
    const p = provider('openai', s.url, { apiKeyEnv: 'TOOL_TEST_KEY' });
    const full = await organismWith(p, []);
    const a = await full.organism.inject('boss', { text: 'go' });
    await settled(full.organism, a.threadId);
    const [rec] = (await full.organism.llmCalls.forMessage(a.messageId)).calls;
    expect(rec).toMatchObject({ agent: 'boss', provider: 'openai', model: 'gpt-4o', attempt: 1, repair: false, error: null, tools: ['send_to_worker', 'reply'] });
    expect(rec!.request).toEqual(s.seen[0]!.body);
    expect(JSON.stringify(rec)).not.toContain('sk-tool-test-secret-999');
    expect(rec!.response).toEqual({ text: 'done', toolCalls: [{ id: 'c1', name: 'send_to_worker', arguments: '{"goal":"g"}' }], finishReason: 'tool_calls' });
    expect(rec!.latencyMs).toBeGreaterThan(0);

    const meta = await startOrganism(
      [listener('boss', { handler: null, agent: true, peers: ['worker'], prompt: 'p', model: 'gpt-4o' }), listener('worker', { payload: 'Task' })],
      { llm: { providers: [p], pricing: {}, record: 'metadata' } },
      {},
      [Text, Task],
    );
    const b = await meta.organism.inject('boss', { text: 'go' });
    await settled(meta.organism, b.threadId);
    const [m] = (await meta.organism.llmCalls.forMessage(b.messageId)).calls;
    expect(m).toMatchObject({ request: null, response: { text: null, toolCalls: [{ id: 'c1', name: 'send_to_worker', arguments: null }], finishReason: 'tool_calls' } });
    expect(m!.usage).not.toBeNull();

    const off = await startOrganism([listener('boss', { handler: null, agent: true, prompt: 'p', model: 'gpt-4o' })], { llm: { providers: [p], pricing: {}, record: 'off' } });
    const c = await off.organism.inject('boss', { text: 'go' });
    await settled(off.organism, c.threadId);
    expect((await off.organism.llmCalls.forMessage(c.messageId)).calls).toEqual([]);
  });

  it('max_tokens_param: max_completion_tokens for a compatible server when configured, max_tokens by default', async () => {
    const s = await track(startOpenAiServer({ replies: [{ body: openAiOk('ok') }] }));
    const viaDefault = await organismWith(provider('openai', s.url), []);
    await settled(viaDefault.organism, (await viaDefault.organism.inject('boss', { text: 'go' })).threadId);
    const configured = await organismWith(provider('openai', s.url, { maxTokensParam: 'max_completion_tokens' }), []);
    await settled(configured.organism, (await configured.organism.inject('boss', { text: 'go' })).threadId);
    expect(s.seen[0]!.body).toHaveProperty('max_tokens', 256);
    expect(s.seen[0]!.body).not.toHaveProperty('max_completion_tokens');
    expect(s.seen[1]!.body).toHaveProperty('max_completion_tokens', 256);
    expect(s.seen[1]!.body).not.toHaveProperty('max_tokens');
  });
});

describe('tools mode, Anthropic Messages', () => {
  const toolUse = (id: string, name: string, input: unknown) => ({ type: 'tool_use', id, name, input });

  it('offers tools with input_schema; single and parallel tool_use blocks become messages', async () => {
    const s = await track(
      startAnthropicServer({
        replies: [
          { body: anthropicOk([{ type: 'text', text: 'On it.' }, toolUse('toolu_1', 'send_to_worker', { goal: 'a' }), toolUse('toolu_2', 'send_to_worker', { goal: 'b', priority: 3 })]) },
        ],
      }),
    );
    const got: unknown[] = [];
    const { organism } = await organismWith(provider('anthropic', s.url, { models: [] }), got);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(got).toEqual([{ goal: 'a' }, { goal: 'b', priority: 3 }]);
    const body = s.seen[0]!.body as Body;
    expect(body).toMatchObject({ stream: true });
    expect(body.tools!.map((t) => t['name'])).toEqual(['send_to_worker', 'reply']);
    expect(body.tools![0]!['input_schema']).toMatchObject({ type: 'object', required: ['goal'] });
    expect(JSON.stringify(body)).not.toContain('secret');
  });

  it('broken tool input is answered with tool_result blocks (is_error) for one repair round', async () => {
    const s = await track(
      startAnthropicServer({
        replies: [
          { body: anthropicOk([toolUse('toolu_1', 'send_to_worker', '{"goal": tru'), toolUse('toolu_2', 'send_to_worker', { goal: 'fine' })]) },
          { body: anthropicOk([toolUse('toolu_3', 'send_to_worker', { goal: 'fixed' })]) },
        ],
      }),
    );
    const got: unknown[] = [];
    const { organism } = await organismWith(provider('anthropic', s.url), got);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    // The valid call of the first answer and the repaired one both go out.
    expect(got).toEqual([{ goal: 'fine' }, { goal: 'fixed' }]);
    const repair = s.seen[1]!.body as { messages: Array<{ role: string; content: unknown }> };
    const last = repair.messages.at(-1)!;
    expect(last.role).toBe('user');
    expect(last.content).toEqual([
      expect.objectContaining({ type: 'tool_result', tool_use_id: 'toolu_1', is_error: true, content: expect.stringContaining('not valid JSON') }),
      expect.objectContaining({ type: 'tool_result', tool_use_id: 'toolu_2', content: expect.stringContaining('Accepted') }),
    ]);
    expect(repair.messages.at(-2)).toMatchObject({
      role: 'assistant',
      content: [
        { type: 'tool_use', id: 'toolu_1', input: {} },
        { type: 'tool_use', id: 'toolu_2', input: { goal: 'fine' } },
      ],
    });
  });

  it('kill mid-stream cancels the request; the call is recorded as aborted with the usage reported so far', async () => {
    const start = {
      type: 'message_start',
      message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [], stop_reason: null, usage: { input_tokens: 77, output_tokens: 1 } },
    };
    const s = await track(
      startAnthropicServer({
        replies: [
          {
            hang: true,
            events: [
              { event: 'message_start', data: start },
              { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
              { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me think' } } },
            ],
          },
        ],
      }),
    );
    const { organism, events } = await organismWith(provider('anthropic', s.url), []);
    const { threadId, messageId } = await organism.inject('boss', { text: 'go' });
    await eventually(() => events.some((e) => e.type === 'llm_delta' && e.text === 'Let me think'), 10_000, 'the first delta');
    await organism.killThread(threadId);
    await eventually(() => s.closedEarly === 1, 10_000, 'the provider to see the request cancelled');
    await eventually(async () => (await organism.llmCalls.forMessage(messageId)).calls.length === 1, 10_000, 'the aborted call to be recorded');
    const [rec] = (await organism.llmCalls.forMessage(messageId)).calls;
    expect(rec!.error).toContain('Aborted');
    expect(rec!.usage).toMatchObject({ promptTokens: 77, completionTokens: 1 });
    await eventually(() => events.some((e) => e.type === 'usage' && e.usage.messageId === messageId && e.usage.promptTokens === 77), 10_000, 'the partial usage');
    expect((await organism.thread(threadId))?.status).toBe('killed');
  });
});
