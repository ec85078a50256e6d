import { Errors } from '../errors/catalogue.js';
import type { FieldError } from '../payload/types.js';
import type { PayloadRegistry } from '../payload/index.js';
import { typeList } from '../payload/inject.js';
import { newId } from '../util/ids.js';
import { identifierReason, unstorableText } from '../util/storable-text.js';
import type { FailureReason } from '../core/delivery.js';
import type { Outgoing } from '../core/handler.js';
import { EXTERNAL_SENDER, type Message } from '../core/message.js';

/** A message a handler asked for that the pump refused (not delivered, audited). */
export interface Refused {
  readonly message: Message;
  readonly reason: Extract<FailureReason, 'peer_denied' | 'hop_limit' | 'unknown_target'>;
  readonly error: string;
}

export type RoutingOutcome = { readonly ok: true; readonly messages: Message[]; readonly refused: Refused[] } | { readonly ok: false; readonly error: string };

export interface RoutingContext {
  readonly sender: { readonly name: string; readonly peers: readonly string[] };
  readonly cause: Message;
  readonly maxHops: number;
  readonly now: number;
  readonly registry: PayloadRegistry;
  /** The payload types a listener accepts (one, or those of `payload: [A, B]`); undefined when no such listener is registered. */
  acceptedTypes(listener: string): readonly string[] | undefined;
  /** The sending delivery's trace context, carried by the messages it sends (not by refused ones); null or absent: none. */
  readonly traceContext?: string | null;
}

/** Normalizes whatever a handler returned into a list, or says why it is not a valid result. */
export function normalizeResult(result: unknown): { ok: true; items: Outgoing[] } | { ok: false; error: string } {
  if (result === undefined || result === null) return { ok: true, items: [] };
  const list = Array.isArray(result) ? result : [result];
  const items: Outgoing[] = [];
  for (const [i, item] of list.entries()) {
    const where = Array.isArray(result) ? `item ${i}` : 'result';
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      return { ok: false, error: `${where} is not an object with a payload` };
    }
    const o = item as Record<string, unknown>;
    const payload = o['payload'];
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
      return { ok: false, error: `${where} has no payload object` };
    }
    if (o['to'] !== undefined && typeof o['to'] !== 'string') return { ok: false, error: `${where}: "to" must be a string` };
    if (o['payloadType'] !== undefined && typeof o['payloadType'] !== 'string') {
      return { ok: false, error: `${where}: "payloadType" must be a string` };
    }
    items.push(o as unknown as Outgoing);
  }
  return { ok: true, items };
}

function describe(errors: readonly FieldError[]): string {
  return errors.map((e) => `${e.path || '(root)'}: ${e.message}`).join('; ');
}

/**
 * Turns a handler's outgoing list into messages. Peer isolation: a listener may send only to
 * its declared peers and reply to its sender; anything else is refused (and the sender is told
 * the same thing whether or not the target exists, so it learns nothing of the topology).
 * A payload that does not fit the target's type makes the whole result invalid.
 */
export function routeOutgoing(items: readonly Outgoing[], ctx: RoutingContext): RoutingOutcome {
  const messages: Message[] = [];
  const refused: Refused[] = [];
  const { cause, sender } = ctx;
  for (const [i, item] of items.entries()) {
    const unstorable = unstorableOutgoing(item);
    if (unstorable) return { ok: false, error: `${items.length > 1 ? `item ${i}: ` : ''}${unstorable}` };
    const to = item.to ?? cause.from;
    const isReply = to === cause.from;
    const base = {
      id: newId(),
      threadId: cause.threadId,
      from: sender.name,
      to,
      timestamp: ctx.now,
      parentId: cause.id,
      hops: cause.hops + 1,
      metadata: cause.metadata,
      attempt: 1,
    };
    if (!isReply && !sender.peers.includes(to)) {
      const message: Message = { ...base, payloadType: item.payloadType ?? 'Payload', payload: item.payload };
      refused.push({ message, reason: 'peer_denied', error: Errors.PEER_DENIED(sender.name, to).detail });
      continue;
    }
    const accepted = to === EXTERNAL_SENDER ? undefined : ctx.acceptedTypes(to);
    if (to !== EXTERNAL_SENDER && accepted === undefined) {
      const message: Message = { ...base, payloadType: item.payloadType ?? 'Payload', payload: item.payload };
      refused.push({ message, reason: 'unknown_target', error: Errors.UNKNOWN_TARGET(to).detail });
      continue;
    }
    // A target of several types cannot be guessed for: the handler names the type (`send(to, payload, 'Approval')`).
    if (item.payloadType === undefined && accepted !== undefined && accepted.length > 1) {
      return { ok: false, error: Errors.PAYLOAD_TYPE_REQUIRED(to, typeList(accepted), accepted[0] ?? '').detail };
    }
    const payloadType = item.payloadType ?? accepted?.[0] ?? inferType(item.payload, ctx.registry);
    if (accepted !== undefined && !accepted.includes(payloadType)) {
      return { ok: false, error: Errors.WRONG_PAYLOAD_TYPE(to, typeList(accepted), payloadType).detail };
    }
    let payload = item.payload;
    const type = ctx.registry.get(payloadType);
    if (type) {
      const checked = type.validate(payload);
      if (!checked.ok) return { ok: false, error: Errors.INVALID_PAYLOAD(payloadType, describe(checked.errors)).detail };
      payload = checked.value;
    } else if (accepted !== undefined) {
      return { ok: false, error: Errors.UNKNOWN_PAYLOAD_TYPE(payloadType).detail };
    }
    if (base.hops > ctx.maxHops) {
      refused.push({ message: { ...base, payloadType, payload }, reason: 'hop_limit', error: Errors.HOP_LIMIT(ctx.maxHops, cause.threadId).detail });
      continue;
    }
    // Made with its trace context at once (not copied to add it afterwards: this runs for every message sent).
    messages.push(ctx.traceContext ? { ...base, payloadType, payload, traceContext: ctx.traceContext } : { ...base, payloadType, payload });
  }
  return { ok: true, messages, refused };
}

/**
 * Why a message a handler (or an LLM reply) asked for could not be journaled as given: text no
 * store keeps in its payload, or a control character in its target or type. The delivery fails
 * once with this reason (invalid_result) instead of its ack failing to commit forever.
 */
function unstorableOutgoing(item: Outgoing): string | null {
  for (const [field, value] of [
    ['to', item.to],
    ['payloadType', item.payloadType],
  ] as const) {
    const reason = value === undefined ? null : identifierReason(value);
    if (reason) return `${field} ${reason}`;
  }
  const problem = unstorableText(item.payload, 'payload');
  return problem ? `${problem.field} ${problem.message}` : null;
}

/** For replies to the outside world: `{"Greeting": {...}}` names its type; otherwise `Payload`. */
function inferType(payload: Record<string, unknown>, registry: PayloadRegistry): string {
  const keys = Object.keys(payload);
  if (keys.length === 1 && registry.has(keys[0]!)) return keys[0]!;
  return 'Payload';
}
