import { afterEach, describe, expect, it } from 'vitest';
import { mockProvider, listener, startOrganism, Text } from '../pump/harness.js';
import type { LlmRecordMode } from '../../src/config/types.js';
import { cleanup, connect, OP, pluginServer, runCleanup, VIEW, type TestClient } from './ws-helpers/harness.js';
import { eventually } from '../pump/harness.js';

const TEXT = 'Once upon a time there was a pump.';

afterEach(runCleanup);

/** An LLM agent whose (mock) model writes a sentence and sends nothing. */
async function writerOrganism(record?: LlmRecordMode) {
  const { organism } = await startOrganism(
    [listener('writer', { handler: null, agent: true, prompt: 'Write.', model: 'mock-1' }), listener('other')],
    { llm: { providers: [mockProvider({ writer: [TEXT] })], pricing: {}, ...(record ? { record } : {}) } },
    {},
    [Text],
  );
  cleanup.push(() => organism.stop().then(() => undefined));
  return organism;
}

describe('llm_delta frames', () => {
  it('stream a model’s text to subscribers (filtered by event, thread and agent like the others), and are never replayed', async () => {
    const organism = await writerOrganism();
    const { url } = await pluginServer({}, [], organism);
    const deltasOnly = await connect(`${url}/ws?token=${OP}&events=llm_delta`);
    const otherAgent = await connect(`${url}/ws?token=${OP}&events=llm_delta&agent=other`);
    const { threadId, messageId } = await organism.inject('writer', { text: 'go' });
    await eventually(
      () =>
        deltasOnly
          .of('llm_delta')
          .map((f) => f['text'])
          .join('') === TEXT,
      10_000,
      'the whole text',
    );
    const frames = deltasOnly.of('llm_delta');
    expect(frames.length).toBeGreaterThan(3);
    const { calls } = await organism.llmCalls.forMessage(messageId);
    for (const f of frames) expect(f).toMatchObject({ threadId, messageId, agent: 'writer', callId: calls[0]!.id });
    expect(deltasOnly.frames.filter((f) => f.event !== 'snapshot' && f.event !== 'llm_delta' && f.event !== 'connected')).toEqual([]);
    expect(otherAgent.of('llm_delta')).toEqual([]);

    // A client that reconnects with `since` gets the events it missed, but no deltas.
    const since = frames[0]!.seq - 1;
    const again = await connect(`${url}/ws?token=${OP}&since=${since}`);
    await eventually(() => again.frames.some((f) => f.event === 'message'), 10_000, 'replayed events');
    expect(again.of('llm_delta')).toEqual([]);
  });
});

/** Waits until a client has seen the thread complete (every delta of its LLM call was sent before). */
async function completed(client: TestClient, threadId: string): Promise<void> {
  await eventually(
    () => client.of('thread_updated').some((f) => (f['thread'] as { id: string; status: string }).id === threadId && (f['thread'] as { status: string }).status === 'completed'),
    10_000,
    `thread ${threadId} to complete on the socket`,
  );
}

describe('llm_delta frames follow the rule of recorded calls', () => {
  it('reach operators only: a viewer on the same organism gets every other frame but no delta', async () => {
    const organism = await writerOrganism();
    const { url } = await pluginServer({}, [], organism);
    const operator = await connect(`${url}/ws?token=${OP}`);
    const viewer = await connect(`${url}/ws?token=${VIEW}`);
    const viewerDeltasAsked = await connect(`${url}/ws?token=${VIEW}&events=llm_delta`);
    const { threadId } = await organism.inject('writer', { text: 'go' });
    await completed(operator, threadId);
    await completed(viewer, threadId);
    await eventually(
      () =>
        operator
          .of('llm_delta')
          .map((f) => f['text'])
          .join('') === TEXT,
      10_000,
      'the operator’s deltas',
    );
    expect(viewer.of('message').length).toBeGreaterThan(0);
    expect(viewer.of('llm_delta')).toEqual([]);
    // A viewer that asks for deltas only gets nothing at all; its socket is the same one, so a
    // frame sent to it would have arrived before the ping's answer.
    viewerDeltasAsked.cmd({ cmd: 'ping', id: 'after' });
    await viewerDeltasAsked.next('pong');
    expect(viewerDeltasAsked.of('llm_delta')).toEqual([]);
  });

  for (const record of ['metadata', 'off'] as const) {
    it(`are not sent at all under llm.record: ${record}, not even to operators`, async () => {
      const organism = await writerOrganism(record);
      const { url } = await pluginServer({}, [], organism);
      const operator = await connect(`${url}/ws?token=${OP}`);
      const { threadId, messageId } = await organism.inject('writer', { text: 'go' });
      await completed(operator, threadId);
      expect(operator.of('usage').length).toBeGreaterThan(0);
      expect(operator.of('llm_delta')).toEqual([]);
      const { calls } = await organism.llmCalls.forMessage(messageId);
      expect(calls.length).toBe(record === 'off' ? 0 : 1);
    });
  }
});
