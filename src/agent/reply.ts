import type { PayloadRegistry, PayloadType } from '../payload/index.js';
import type { Outgoing } from '../core/handler.js';
import { findEnvelopes } from './envelopes.js';
import type { PeerCard } from './prompt.js';

export type ParsedReply = { ok: true; outgoing: Outgoing[] } | { ok: false; errors: string[] };

// Both are linear on any input: a literal start, and runs that cannot overlap between tries.
const DONE = /<done\s*\/>|<done>\s*<\/done>/;
const TO_ATTR = /\bto\s*=\s*(?:"([^"]*)"|'([^']*)')/;
const ROOT_TAG = /^\s*<([A-Za-z_][\w.-]*)/;

/** Problems listed one by one before the rest are counted ("... and N more"). */
const MAX_LISTED_ERRORS = 20;

/**
 * Reads an agent's XML answer: `<send to="peer">`, `<reply>` and `<done/>` elements; text
 * around them is ignored. Every payload is validated against its target's type, and every
 * problem is reported (they are shown to the model in the repair round). An answer sending
 * more than `maxMessages` messages is refused whole, before any payload is parsed.
 */
export function parseAgentReply(
  content: string,
  ctx: { peers: readonly PeerCard[]; replyTypes: readonly PayloadType[] | null; registry: PayloadRegistry; maxMessages: number },
): ParsedReply {
  const outgoing: Outgoing[] = [];
  const errors: string[] = [];
  const text = stripCodeFences(content);
  const envelopes = findEnvelopes(text);
  if (envelopes.length > ctx.maxMessages) {
    return { ok: false, errors: [`the reply sends ${envelopes.length} messages; at most ${ctx.maxMessages} are allowed in one reply`] };
  }
  let found = 0;
  for (const { kind, attrs, inner } of envelopes) {
    found++;
    const rootTag = ROOT_TAG.exec(inner)?.[1];
    if (!rootTag) {
      errors.push(`<${kind}> #${found} contains no payload element`);
      continue;
    }
    if (kind === 'send') {
      const to = TO_ATTR.exec(attrs);
      const target = to?.[1] ?? to?.[2];
      if (!target) {
        errors.push(`<send> #${found} has no to="..." attribute`);
        continue;
      }
      const peer = ctx.peers.find((p) => p.name === target);
      if (!peer) {
        // Refused by the pump too; saying so here lets the model correct itself.
        errors.push(`"${target}" is not one of your peers (${ctx.peers.map((p) => p.name).join(', ') || 'none'})`);
        continue;
      }
      const type = peer.types.find((t) => t.name === rootTag);
      if (!type) {
        errors.push(`${target} accepts ${elements(peer.types)}, not <${rootTag}>`);
        continue;
      }
      const checked = type.fromXml(inner.trim());
      if (!checked.ok) errors.push(...checked.errors.map((e) => `<${rootTag}> for ${target}: ${e.path || '(root)'}: ${e.message}`));
      else outgoing.push({ to: target, payloadType: rootTag, payload: checked.value });
    } else {
      const type = ctx.replyTypes ? ctx.replyTypes.find((t) => t.name === rootTag) : ctx.registry.get(rootTag);
      if (ctx.replyTypes && !type) {
        errors.push(`a reply must be ${elements(ctx.replyTypes)}, not <${rootTag}>`);
        continue;
      }
      if (!type) {
        errors.push(`unknown payload type <${rootTag}> in <reply>`);
        continue;
      }
      const checked = type.fromXml(inner.trim());
      if (!checked.ok) errors.push(...checked.errors.map((e) => `<${rootTag}> reply: ${e.path || '(root)'}: ${e.message}`));
      else outgoing.push({ payloadType: rootTag, payload: checked.value });
    }
  }
  if (found === 0 && !DONE.test(text)) errors.push('no <send>, <reply> or <done/> element found');
  return errors.length > 0 ? { ok: false, errors: listed(errors) } : { ok: true, outgoing };
}

/** `<Ticket>`, or `<Ticket> or <Approval>`: the elements a target accepts. */
function elements(types: readonly PayloadType[]): string {
  const tags = types.map((t) => `<${t.name}>`);
  return tags.length <= 1 ? (tags[0] ?? '') : `${tags.slice(0, -1).join(', ')} or ${tags[tags.length - 1]}`;
}

/** The first problems, then a count of the rest: they go into a prompt and a failure reason. */
function listed(errors: string[]): string[] {
  if (errors.length <= MAX_LISTED_ERRORS) return errors;
  return [...errors.slice(0, MAX_LISTED_ERRORS), `... and ${errors.length - MAX_LISTED_ERRORS} more problems`];
}

function stripCodeFences(s: string): string {
  return s.replace(/```(?:xml)?/g, '');
}
