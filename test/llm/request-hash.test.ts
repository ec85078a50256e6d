import { describe, expect, it } from 'vitest';
import { canonicalJson, requestHash } from '../../src/llm/request-hash.js';
import type { CompletionRequest } from '../../src/llm/types.js';

const base: CompletionRequest = {
  model: 'gpt-test',
  system: 'You research.',
  maxOutputTokens: 256,
  messages: [
    { role: 'user', content: 'hello' },
    { role: 'assistant', content: '', toolCalls: [{ id: 'hist_0193aaaa', name: 'send_to_writer', arguments: '{"a":1}' }] },
    { role: 'tool', toolCallId: 'hist_0193aaaa', name: 'send_to_writer', content: 'Sent.' },
  ],
  tools: [{ name: 'send_to_writer', description: 'Send', parameters: { type: 'object', properties: { a: { type: 'number' } } } }],
};

describe('request hash (time travel)', () => {
  it('is the same for the same request, whatever the key order and the tool call ids', () => {
    const h = requestHash('researcher', base);
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    const renamed: CompletionRequest = {
      ...base,
      messages: [
        base.messages[0]!,
        { role: 'assistant', content: '', toolCalls: [{ id: 'hist_0193bbbb', name: 'send_to_writer', arguments: '{"a":1}' }] },
        { role: 'tool', toolCallId: 'hist_0193bbbb', name: 'send_to_writer', content: 'Sent.' },
      ],
      tools: [{ parameters: { properties: { a: { type: 'number' } }, type: 'object' }, description: 'Send', name: 'send_to_writer' }],
      // Not part of the request as sent: the provider's read limit and who asks.
      maxReplyBytes: 10,
      threadId: 'other',
    };
    expect(requestHash('researcher', renamed)).toBe(h);
  });

  it('differs with the agent, the model, the output cap, the prompt, a message, a tool, or which call a result answers', () => {
    const h = requestHash('researcher', base);
    const changed: Array<[string, CompletionRequest]> = [
      ['model', { ...base, model: 'gpt-other' }],
      ['output cap', { ...base, maxOutputTokens: 255 }],
      ['prompt', { ...base, system: 'You research carefully.' }],
      ['message', { ...base, messages: [{ role: 'user', content: 'hello!' }, ...base.messages.slice(1)] }],
      ['tools', { ...base, tools: [] }],
      ['tool arguments', { ...base, tools: [{ ...base.tools![0]!, parameters: { type: 'object' } }] }],
      [
        'answered call',
        {
          ...base,
          messages: [
            base.messages[0]!,
            {
              role: 'assistant',
              content: '',
              toolCalls: [
                { id: 'x', name: 'send_to_writer', arguments: '{"a":1}' },
                { id: 'y', name: 'send_to_writer', arguments: '{"a":1}' },
              ],
            },
            { role: 'tool', toolCallId: 'y', name: 'send_to_writer', content: 'Sent.' },
          ],
        },
      ],
    ];
    for (const [what, request] of changed) expect(requestHash('researcher', request), what).not.toBe(h);
    expect(requestHash('writer', base)).not.toBe(h);
  });

  it('canonical JSON sorts keys at every level, keeps array order, leaves undefined members out', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: undefined }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"z":1}]},"b":1}');
  });
});
