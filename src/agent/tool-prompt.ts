import type { ListenerConfig } from '../config/types.js';
import { peerToolName, REPLY_TOOL } from '../llm/tool-names.js';
import type { PayloadType } from '../payload/index.js';
import { names, type PeerCard } from './prompt.js';

/**
 * The system prompt of an agent in `tools` mode: its own instructions, how to act with tools,
 * and its declared peers only (their payload schemas travel as the tools' parameters). It
 * never names other listeners.
 */
export function buildToolSystemPrompt(input: {
  listener: ListenerConfig;
  peers: readonly PeerCard[];
  sender: string;
  replyTypes: readonly PayloadType[] | null;
  hasOtherTools: boolean;
}): string {
  const { listener, peers, sender, replyTypes } = input;
  const [replyType] = replyTypes ?? [];
  const parts: string[] = [];
  parts.push(listener.prompt?.trim() || listener.description || `You are ${listener.name}.`);
  parts.push(
    [
      '## How to answer',
      'You act by calling tools. Each call sends one message:',
      '- `send_to_<peer>` sends a payload to that peer;',
      `- \`${REPLY_TOOL}\` answers the sender of the message you are handling (${sender}).`,
      'You may call several tools at once: each call is one message. Messages are sent when your answer is complete.',
      ...(input.hasOtherTools ? ['Your other tools look things up: their results come back to you, and you answer again.'] : []),
      'When nothing (more) needs to be sent, answer with plain text: it is not sent to anyone.',
    ].join('\n'),
  );
  if (peers.length === 0) {
    parts.push('## Your peers\nYou have no peers: you can only reply to the sender.');
  } else {
    const cards = peers.map((p) => `### ${p.name}\n${p.description || '(no description)'}\n${callWith(peerToolName(p.name), p.types)}`);
    parts.push(`## Your peers\n${cards.join('\n\n')}`);
  }
  parts.push(
    replyTypes && replyTypes.length > 1
      ? `## Replying\nA reply to ${sender} is one payload of ${names(replyTypes)}, under its type's name: call \`${REPLY_TOOL}\` with e.g. \`{"${replyType?.name}": {...}}\`.`
      : replyType
        ? `## Replying\nA reply to ${sender} must be a \`${replyType.name}\` payload (the \`${REPLY_TOOL}\` tool's parameters).`
        : `## Replying\n${sender} accepts any payload type: name it in the \`${REPLY_TOOL}\` call.`,
  );
  return parts.join('\n\n');
}

/** How to call a send tool: with the one type's payload, or with one of several under its type's name. */
function callWith(tool: string, types: readonly PayloadType[]): string {
  const [first] = types;
  if (types.length === 1 && first) return `Call \`${tool}\` with a \`${first.name}\` payload.`;
  return `Call \`${tool}\` with one payload of ${names(types)}, under its type's name: \`{"${first?.name}": {...}}\`.`;
}
