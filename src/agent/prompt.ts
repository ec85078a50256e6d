import type { ListenerConfig } from '../config/types.js';
import type { PayloadType } from '../payload/index.js';

export interface PeerCard {
  readonly name: string;
  readonly description: string;
  /** The payload types it accepts: one, or those of `payload: [A, B]`. */
  readonly types: readonly PayloadType[];
}

/**
 * The system prompt of an LLM agent: its own instructions, then its declared peers only
 * (description, schema, example), then the reply format. It never names other listeners.
 */
export function buildSystemPrompt(input: { listener: ListenerConfig; peers: readonly PeerCard[]; sender: string; replyTypes: readonly PayloadType[] | null }): string {
  const { listener, peers, replyTypes } = input;
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
    const cards = peers.map((p) => {
      const [only] = p.types;
      if (p.types.length === 1 && only) {
        return [
          `### ${p.name}`,
          p.description || '(no description)',
          `Accepts payload type \`${only.name}\`.`,
          'Schema:',
          '```xml',
          only.xsd().trim(),
          '```',
          'Example:',
          '```xml',
          `<send to="${p.name}">${only.exampleXml().trim()}</send>`,
          '```',
        ].join('\n');
      }
      // Several types: each with its schema and example; one message carries one of them.
      const each = p.types.map((t) =>
        [`#### \`${t.name}\``, 'Schema:', '```xml', t.xsd().trim(), '```', 'Example:', '```xml', `<send to="${p.name}">${t.exampleXml().trim()}</send>`, '```'].join('\n'),
      );
      return [`### ${p.name}`, p.description || '(no description)', `Accepts payload types ${names(p.types)}: each message one element of one of them.`, ...each].join('\n');
    });
    parts.push(`## Your peers\n${cards.join('\n\n')}`);
  }
  const [replyType] = replyTypes ?? [];
  if (replyTypes && replyTypes.length > 1) {
    const examples = replyTypes.flatMap((t) => ['```xml', `<reply>${t.exampleXml().trim()}</reply>`, '```']);
    parts.push(['## Replying', `A reply to your current sender must be one of the payload types ${names(replyTypes)}:`, ...examples].join('\n'));
  } else if (replyType) {
    parts.push(['## Replying', `A reply to your current sender must be a \`${replyType.name}\` payload:`, '```xml', `<reply>${replyType.exampleXml().trim()}</reply>`, '```'].join('\n'));
  } else {
    parts.push('## Replying\nA reply to your current sender may use any payload element, e.g. `<reply><Answer><text>...</text></Answer></reply>`.');
  }
  return parts.join('\n\n');
}

/** `` `Ticket`, `Approval` ``: the names of several payload types, for a prompt. */
export function names(types: readonly PayloadType[]): string {
  return types.map((t) => `\`${t.name}\``).join(', ');
}
