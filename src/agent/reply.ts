import type { PayloadRegistry, PayloadType } from '../payload/index.js';
import type { Outgoing } from '../pump/handler.js';
import type { PeerCard } from './prompt.js';

export type ParsedReply = { ok: true; outgoing: Outgoing[] } | { ok: false; errors: string[] };

const ENVELOPE = /<(send|reply)\b([^>]*)>([\s\S]*?)<\/\1\s*>/g;
const DONE = /<done\s*\/>|<done>\s*<\/done>/;
const TO_ATTR = /\bto\s*=\s*(?:"([^"]*)"|'([^']*)')/;
const ROOT_TAG = /^\s*<([A-Za-z_][\w.-]*)/;

/**
 * Reads an agent's XML answer: `<send to="peer">`, `<reply>` and `<done/>` elements; text
 * around them is ignored. Every payload is validated against its target's type, and every
 * problem is reported (they are shown to the model in the repair round).
 */
export function parseAgentReply(
  content: string,
  ctx: { peers: readonly PeerCard[]; replyType: PayloadType | null; registry: PayloadRegistry },
): ParsedReply {
  const outgoing: Outgoing[] = [];
  const errors: string[] = [];
  const text = stripCodeFences(content);
  let found = 0;
  for (const match of text.matchAll(ENVELOPE)) {
    found++;
    const [, kind, attrs = '', inner = ''] = match;
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
      if (rootTag !== peer.type.name) {
        errors.push(`${target} accepts <${peer.type.name}>, not <${rootTag}>`);
        continue;
      }
      const checked = peer.type.fromXml(inner.trim());
      if (!checked.ok) errors.push(...checked.errors.map((e) => `<${rootTag}> for ${target}: ${e.path || '(root)'}: ${e.message}`));
      else outgoing.push({ to: target, payloadType: rootTag, payload: checked.value });
    } else {
      const type = ctx.replyType ?? ctx.registry.get(rootTag);
      if (ctx.replyType && rootTag !== ctx.replyType.name) {
        errors.push(`a reply must be <${ctx.replyType.name}>, not <${rootTag}>`);
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
  return errors.length > 0 ? { ok: false, errors } : { ok: true, outgoing };
}

function stripCodeFences(s: string): string {
  return s.replace(/```(?:xml)?/g, '');
}
