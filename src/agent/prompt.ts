import type { ListenerConfig } from '../config/types.js';
import type { PayloadType } from '../payload/index.js';

export interface PeerCard {
  readonly name: string;
  readonly description: string;
  readonly type: PayloadType;
}

/**
 * The system prompt of an LLM agent: its own instructions, then its declared peers only
 * (description, schema, example), then the reply format. It never names other listeners.
 */
export function buildSystemPrompt(input: { listener: ListenerConfig; peers: readonly PeerCard[]; sender: string; replyType: PayloadType | null }): string {
  const { listener, peers, replyType } = input;
  const parts: string[] = [];
  parts.push(listener.prompt?.trim() || listener.description || `You are ${listener.name}.`);
  parts.push(
    [
      '## How to answer',
      'Answer with XML only. Each message you send is one element:',
      '- `<send to="PEER">...payload...</send>` sends a payload to one of your peers;',
      '- `<reply>...payload...</reply>` answers the sender of the message you are handling;',
      '- `<done/>` when nothing needs to be sent.',
      'You may send several messages. The payload inside is one element whose tag is the payload type.',
    ].join('\n'),
  );
  if (peers.length === 0) {
    parts.push('## Your peers\nYou have no peers: you can only reply to the sender.');
  } else {
    const cards = peers.map((p) =>
      [
        `### ${p.name}`,
        p.description || '(no description)',
        `Accepts payload type \`${p.type.name}\`.`,
        'Schema:',
        '```xml',
        p.type.xsd().trim(),
        '```',
        'Example:',
        '```xml',
        `<send to="${p.name}">${p.type.exampleXml().trim()}</send>`,
        '```',
      ].join('\n'),
    );
    parts.push(`## Your peers\n${cards.join('\n\n')}`);
  }
  if (replyType) {
    parts.push(['## Replying', `A reply to your current sender must be a \`${replyType.name}\` payload:`, '```xml', `<reply>${replyType.exampleXml().trim()}</reply>`, '```'].join('\n'));
  } else {
    parts.push('## Replying\nA reply to your current sender may use any payload element, e.g. `<reply><Answer><text>...</text></Answer></reply>`.');
  }
  return parts.join('\n\n');
}
