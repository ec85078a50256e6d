import { afterEach, describe, expect, it } from 'vitest';
import { mockProvider, listener, startOrganism, Text } from '../pump/harness.js';
import { cleanup, connect, OP, pluginServer, runCleanup } from './ws-helpers/harness.js';
import { eventually } from '../pump/harness.js';

afterEach(runCleanup);

/** An LLM agent whose (mock) model writes a sentence and sends nothing. */
async function writerOrganism() {
  const { organism } = await startOrganism(
    [listener('writer', { handler: null, agent: true, prompt: 'Write.', model: 'mock-1' }), listener('other')],
    { llm: { providers: [mockProvider({ writer: ['Once upon a time there was a pump.'] })], pricing: {} } },
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
    await eventually(() => deltasOnly.of('llm_delta').map((f) => f['text']).join('') === 'Once upon a time there was a pump.', 10_000, 'the whole text');
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
