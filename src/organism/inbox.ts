import { acceptedTypes } from '../config/accepted-types.js';
import type { ListenerConfig } from '../config/types.js';
import type { InboxClosed, InboxCounts, InboxItem, InboxOutcome } from '../core/inbox.js';
import type { AskClosing, Journal, JournalEntry } from '../core/journal.js';
import type { ApprovalDecision, ProposedCall } from '../core/approval.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import { EXTERNAL_SENDER, isSystemName, type Message } from '../core/message.js';
import { Errors } from '../errors/catalogue.js';
import type { EventBus } from '../events/bus.js';
import type { OrganismEvent } from '../events/types.js';
import { assertStorableInject, resolveInjectPayload, type PayloadRegistry } from '../payload/index.js';
import type { PayloadType } from '../payload/payload-type.js';
import type { Pump } from '../pump/pump.js';
import { systemErrorMessage } from '../pump/system-messages.js';
import { newId } from '../util/ids.js';
import { unstorableText } from '../util/storable-text.js';
import type { Logger } from '../util/logger.js';

/** What the inbox works with (the organism's parts; it knows nothing of HTTP). */
export interface InboxHost {
  readonly journal: Journal;
  readonly pump: Pump;
  readonly bus: EventBus;
  readonly logger: Logger;
  registry(): PayloadRegistry;
  maxHops(): number;
  now(): number;
}

export interface InboxQuery {
  readonly listener?: string;
  readonly threadId?: string;
  readonly kind?: 'ask' | 'approval';
  readonly limit: number;
  readonly offset: number;
}

/** An answer as a person gives it: `payload` in the inject form, to the asker unless `to` names a peer. */
export interface InboxAnswer {
  readonly payload: unknown;
  readonly to?: string;
  readonly note?: string;
}

/** Open asks are looked for again this often, for those parked by other processes (a cluster) whose event was missed. */
const RESCAN_MS = 30_000;

/**
 * The inbox (issue 25): asks to `builtin:human` listeners, AWAITING in the journal, listed and
 * closed here. Every close is the store's conditional AWAITING -> ACKED/FAILED (the first close
 * wins, also across processes sharing a database), with what it sends in the same transaction.
 * Expiry: a timer at the nearest `expiresAt` this process knows of (asks loaded at start,
 * opened here, or heard from other processes), and a slow rescan for what it missed.
 */
export class Inbox {
  private timer: NodeJS.Timeout | null = null;
  private timerAt: number | null = null;
  private rescan: NodeJS.Timeout | null = null;
  private stopped = false;
  private sweeping: Promise<void> | null = null;
  private readonly unsubscribe: () => void;

  constructor(private readonly host: InboxHost) {
    this.unsubscribe = host.bus.on(
      (event, origin) => {
        if (origin === null && event.type === 'message' && event.state === 'AWAITING') void this.opened(event.message);
        else if (origin !== null && event.type === 'inbox_opened' && event.item.expiresAt !== null) this.schedule(event.item.expiresAt);
        else if (origin !== null && event.type === 'inbox_closed') host.pump.forgetAsk(event.closed.threadId, event.closed.id);
      },
      { relayed: true },
    );
  }

  /** At start, before the pump starts: the open asks the store holds are known to the pump (their threads wait). */
  async load(): Promise<void> {
    this.host.pump.knowAsks(await this.host.journal.openAsks());
  }

  /** Once the pump runs: expiries are watched; overdue ones expire now. */
  start(): void {
    this.rescan = setInterval(() => this.sweep(), RESCAN_MS);
    this.rescan.unref();
    this.sweep();
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    if (this.timer) clearTimeout(this.timer);
    if (this.rescan) clearInterval(this.rescan);
    this.timer = null;
  }

  /** Open items, oldest first, filtered and paged. */
  async list(q: InboxQuery): Promise<{ items: InboxItem[]; total: number }> {
    // Asks wait for people: they are few (bounded by what people answer), read whole and filtered here.
    const open = await this.host.journal.openAsks();
    const matching = open.filter((e) => (!q.kind || kindOf(e) === q.kind) && (!q.listener || e.message.to === q.listener) && (!q.threadId || e.message.threadId === q.threadId));
    return { items: matching.slice(q.offset, q.offset + q.limit).map((e) => this.itemOf(e)), total: matching.length };
  }

  /** One item, open or closed (404 when it is not an ask). */
  async entry(id: string): Promise<JournalEntry> {
    const entry = await this.host.journal.get(id);
    if (!entry || !this.isAsk(entry)) throw Errors.INBOX_ITEM_NOT_FOUND(id);
    return entry;
  }

  async counts(): Promise<InboxCounts> {
    const { counts } = await this.host.journal.keptStats();
    // Approvals are told apart by reading the open items (few: bounded by what people decide).
    const approvals = counts.AWAITING === 0 ? 0 : (await this.host.journal.openAsks()).filter((e) => e.approval).length;
    return { open: counts.AWAITING, asks: counts.AWAITING - approvals, approvals };
  }

  /**
   * Answers an ask: its listener sends `payload` to the asker (validated against what the asker
   * accepts, as a reply from code is) or to one of its peers; the ask is ACKED in the same
   * transaction. 422 naming the fields when it does not validate; 409 when already closed.
   */
  async answer(id: string, answer: InboxAnswer, by: string): Promise<Message> {
    const entry = await this.openEntry(id);
    const note = storableNote(answer.note ?? null);
    const message = this.answerMessage(entry.message, answer.to, answer.payload);
    await this.close(entry, { state: 'ACKED', reason: null, error: null, by, note, outgoing: [message] }, 'answered');
    return message;
  }

  /**
   * Approves a pending approval: the calls run as proposed, or (with `calls`) with the person's
   * arguments, validated against each tool's parameters (422 naming the field). The decision is
   * written with the move out of AWAITING; the delivery then continues. 409 once decided.
   */
  async approve(id: string, approval: InboxApproval, by: string): Promise<InboxClosed> {
    const entry = await this.openEntry(id);
    const state = entry.approval;
    if (!state) throw invalid('calls', `${id} is an ask, not an approval: answer or reject it`);
    const note = storableNote(approval.note ?? null);
    const args: Record<string, unknown> = {};
    for (const c of state.proposedCalls) args[c.id] = c.arguments;
    const edits = approval.calls ?? [];
    edits.forEach((edit, i) => {
      const call = state.proposedCalls.find((c) => c.id === edit.id);
      if (!call) throw invalid(`calls[${i}].id`, `no proposed call ${edit.id} (proposed: ${state.proposedCalls.map((c) => c.id).join(', ')})`);
      checkArguments(call.parameters, edit.arguments, `calls[${i}].arguments`);
      args[call.id] = edit.arguments;
    });
    const edited = edits.some((e) => JSON.stringify(e.arguments) !== JSON.stringify(state.proposedCalls.find((c) => c.id === e.id)?.arguments));
    return this.decide(entry, { kind: 'approved', arguments: args, note, by, at: this.host.now() }, edited ? 'edited' : 'approved');
  }

  /** Rejects an ask (FAILED `rejected` with the note; the asker gets the SystemError a failed delivery sends), or an approval (the model hears the refusal and answers again). */
  async reject(id: string, note: string, by: string): Promise<InboxClosed> {
    const entry = await this.openEntry(id);
    storableNote(note);
    if (entry.approval) return this.decide(entry, { kind: 'rejected', arguments: {}, note, by, at: this.host.now() }, 'rejected');
    const error = Errors.ASK_REJECTED(entry.message.to, by, note).detail;
    return this.close(entry, this.failing(entry.message, 'rejected', error, by, note), 'rejected');
  }

  /** A thread was killed (by `by`: who killed it): its open asks close (FAILED `killed`). */
  async threadKilled(threadId: string, by: string): Promise<void> {
    const open = (await this.host.journal.openAsks()).filter((e) => e.message.threadId === threadId);
    const error = Errors.THREAD_KILLED(threadId).detail;
    for (const entry of open) {
      await this.close(entry, { state: 'FAILED', reason: 'killed', error, by, note: null, outgoing: [] }, 'killed').catch((err: unknown) => {
        if (!Errors.INBOX_ITEM_CLOSED.is(err)) throw err;
      });
    }
  }

  private async openEntry(id: string): Promise<JournalEntry> {
    const entry = await this.entry(id);
    if (entry.state !== 'AWAITING') throw Errors.INBOX_ITEM_CLOSED(id, outcomeText(entry));
    return entry;
  }

  private async decide(entry: JournalEntry, decision: ApprovalDecision, outcome: InboxOutcome): Promise<InboxClosed> {
    const closedFirst = await this.host.pump.decideApproval(entry, decision);
    return this.closed(entry, closedFirst, { outcome, by: decision.by, at: decision.at, note: decision.note, sentId: null });
  }

  private async close(entry: JournalEntry, closing: AskClosing, outcome: InboxOutcome): Promise<InboxClosed> {
    const closedFirst = await this.host.pump.closeAsk(entry, closing);
    return this.closed(entry, closedFirst, { outcome, by: closing.by, at: this.host.now(), note: closing.note, sentId: closing.outgoing[0]?.id ?? null });
  }

  /** After a decision or a close: told as `inbox_closed` when this one came first, else the 409 of the first one's outcome. */
  private async closed(entry: JournalEntry, first: boolean, how: Pick<InboxClosed, 'outcome' | 'by' | 'at' | 'note' | 'sentId'>): Promise<InboxClosed> {
    const { message } = entry;
    if (!first) {
      const now = await this.host.journal.get(message.id);
      throw Errors.INBOX_ITEM_CLOSED(message.id, now ? outcomeText(now) : 'gone');
    }
    const closed: InboxClosed = { id: message.id, kind: kindOf(entry), threadId: message.threadId, listener: message.to, ...how };
    this.host.bus.emit({ type: 'inbox_closed', closed });
    return closed;
  }

  /** A FAILED close, with the SystemError to the asker (unless the asker is the system). */
  private failing(ask: Message, reason: 'rejected' | 'timeout', error: string, by: string, note: string | null): AskClosing {
    const notice = isSystemName(ask.from) ? [] : [systemErrorMessage(ask, ask.from, reason, error, this.host.now())];
    return { state: 'FAILED', reason, error, by, note, outgoing: notice };
  }

  /**
   * The answer as the human listener's message: a reply to the asker, or a send to one of its
   * peers, its payload in the inject form (`{Type: {...}}`, or the bare fields of the one type
   * the target accepts). Refused (422, naming the field) as a reply from code would be.
   */
  private answerMessage(ask: Message, to: string | undefined, body: unknown): Message {
    const listener = this.listenerConfig(ask.to);
    const target = to ?? ask.from;
    if (target !== ask.from && !(listener?.peers ?? []).includes(target)) {
      throw Errors.INVALID_REQUEST.withData(
        [{ location: 'body', field: 'to', message: `${ask.to} may answer ${ask.from} (the asker) or send to its peers (${(listener?.peers ?? []).join(', ') || 'none'}), not ${target}` }],
        `to: ${target} is neither the asker nor a peer of ${ask.to}`,
      );
    }
    assertStorableInject(target, body, undefined, undefined);
    const { payloadType, payload } = this.resolvePayload(target, body);
    const hops = ask.hops + 1;
    if (hops > this.host.maxHops())
      throw Errors.INVALID_REQUEST.withData(
        [{ location: 'body', field: 'to', message: Errors.HOP_LIMIT(this.host.maxHops(), ask.threadId).detail }],
        Errors.HOP_LIMIT(this.host.maxHops(), ask.threadId).detail,
      );
    return {
      id: newId(),
      threadId: ask.threadId,
      from: ask.to,
      to: target,
      payloadType,
      payload,
      timestamp: this.host.now(),
      parentId: ask.id,
      hops,
      metadata: ask.metadata,
      attempt: 1,
    };
  }

  private resolvePayload(target: string, body: unknown): { payloadType: string; payload: Record<string, unknown> } {
    const registry = this.host.registry();
    const types = this.targetTypes(target);
    if (types) return resolveInjectPayload(body, types, registry, target);
    // The outside world accepts any payload: one naming a known type is validated as that type.
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      const errors = [{ path: '', message: 'payload must be a JSON object' }];
      throw Errors.INVALID_PAYLOAD.withData(errors, 'answer', 'payload must be a JSON object');
    }
    const keys = Object.keys(body);
    const named = keys.length === 1 ? registry.get(keys[0]!) : undefined;
    if (named) return resolveInjectPayload(body, named, registry, target);
    return { payloadType: 'Payload', payload: body as Record<string, unknown> };
  }

  /** The payload types `target` accepts (null: the outside world, any). 422 on `to` when it is no listener. */
  private targetTypes(target: string): PayloadType[] | null {
    if (target === EXTERNAL_SENDER) return null;
    const config = this.listenerConfig(target);
    if (!config) throw Errors.INVALID_REQUEST.withData([{ location: 'body', field: 'to', message: Errors.UNKNOWN_TARGET(target).detail }], Errors.UNKNOWN_TARGET(target).detail);
    const registry = this.host.registry();
    return acceptedTypes(config).flatMap((name) => registry.get(name) ?? []);
  }

  private listenerConfig(name: string): ListenerConfig | undefined {
    return this.host.pump.listener(name)?.config;
  }

  private isAsk(entry: JournalEntry): boolean {
    return entry.state === 'AWAITING' || entry.expiresAt !== undefined || entry.closedBy !== undefined || this.listenerConfig(entry.message.to)?.human !== undefined;
  }

  itemOf(entry: JournalEntry): InboxItem {
    const { message } = entry;
    if (entry.approval) {
      const calls = entry.approval.proposedCalls;
      return {
        id: message.id,
        kind: 'approval',
        threadId: message.threadId,
        messageId: message.id,
        listener: message.to,
        from: message.from,
        payloadType: message.payloadType,
        payload: message.payload,
        proposedCalls: calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
        answerSchema: approvalSchema(calls),
        peerSchemas: {}, // an approval is decided, not answered on to a peer
        createdAt: entry.dispatchedAt ?? entry.createdAt,
        expiresAt: null,
      };
    }
    return {
      id: message.id,
      kind: 'ask',
      threadId: message.threadId,
      messageId: message.id,
      listener: message.to,
      from: message.from,
      payloadType: message.payloadType,
      payload: message.payload,
      answerSchema: this.answerSchema(message.from),
      peerSchemas: Object.fromEntries((this.listenerConfig(message.to)?.peers ?? []).map((peer) => [peer, this.answerSchema(peer)])),
      createdAt: entry.dispatchedAt ?? entry.createdAt,
      expiresAt: entry.expiresAt ?? null,
    };
  }

  /** What a message to `target` (the asker or a peer) must meet: its one type's schema (bare fields), or one of `{Type: {...}}`; the outside world: any object. */
  private answerSchema(target: string): Record<string, unknown> {
    let types: PayloadType[] | null;
    try {
      types = this.targetTypes(target);
    } catch {
      types = null;
    }
    if (!types || types.length === 0) return { type: 'object' };
    if (types.length === 1) return types[0]!.jsonSchema();
    return {
      oneOf: types.map((t) => ({ type: 'object', properties: { [t.name]: t.jsonSchema() }, required: [t.name], additionalProperties: false })),
    };
  }

  // ---------------------------------------------------------------- opened, expiry

  private async opened(message: Message): Promise<void> {
    try {
      const entry = await this.host.journal.get(message.id);
      if (!entry || entry.state !== 'AWAITING' || this.stopped) return;
      const item = this.itemOf(entry);
      this.host.bus.emit({ type: 'inbox_opened', item } satisfies OrganismEvent);
      if (item.expiresAt !== null) this.schedule(item.expiresAt);
    } catch (err) {
      this.host.logger.warn({ err, messageId: message.id }, 'an ask was parked but could not be read back for the inbox event');
    }
  }

  /** The timer goes off at the nearest expiry known. */
  private schedule(at: number): void {
    if (this.stopped || (this.timerAt !== null && this.timerAt <= at)) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.sweep(), Math.max(0, at - this.host.now()));
    this.timer.unref();
  }

  /** Expires every overdue ask, then sets the timer for the next expiry. One sweep at a time. */
  private sweep(): void {
    if (this.stopped) return;
    if (this.sweeping) return;
    this.timer = null;
    this.timerAt = null;
    this.sweeping = this.expireDue()
      .catch((err: unknown) => {
        this.host.logger.warn({ err }, 'expiring asks failed; tried again shortly');
        this.schedule(this.host.now() + 1_000);
      })
      .finally(() => {
        this.sweeping = null;
      });
  }

  private async expireDue(): Promise<void> {
    const open = await this.host.journal.openAsks();
    const now = this.host.now();
    let next: number | null = null;
    for (const entry of open) {
      const at = entry.expiresAt ?? null;
      if (at === null) continue;
      if (at > now) {
        next = next === null ? at : Math.min(next, at);
        continue;
      }
      if (this.stopped) return;
      await this.expire(entry).catch((err: unknown) => {
        if (!Errors.INBOX_ITEM_CLOSED.is(err)) throw err;
      });
    }
    if (next !== null) this.schedule(next);
  }

  /** An ask nobody answered in time: `on_timeout: fail` (FAILED `timeout`) or the default reply (answered by `timeout`). */
  private async expire(entry: JournalEntry): Promise<void> {
    const ask = entry.message;
    const human = this.listenerConfig(ask.to)?.human;
    const onTimeout = human?.onTimeout ?? 'fail';
    if (onTimeout !== 'fail') {
      try {
        const message = this.answerMessage(ask, undefined, onTimeout.reply);
        await this.close(entry, { state: 'ACKED', reason: null, error: null, by: 'timeout', note: null, outgoing: [message] }, 'expired');
        return;
      } catch (err) {
        if (Errors.INBOX_ITEM_CLOSED.is(err)) throw err;
        // The configured reply does not fit this asker: the ask fails instead, saying why.
        this.host.logger.warn({ err, messageId: ask.id, listener: ask.to }, 'the on_timeout reply does not fit the asker; the ask fails instead');
      }
    }
    const seconds = human?.timeoutSeconds ?? Math.round(((entry.expiresAt ?? 0) - (entry.dispatchedAt ?? entry.createdAt)) / 1000);
    await this.close(entry, this.failing(ask, 'timeout', Errors.ASK_EXPIRED(ask.to, seconds).detail, 'timeout', null), 'expired');
  }
}

/** A person's approval: the calls as proposed, or edited (`calls`, by proposed call id). */
export interface InboxApproval {
  readonly calls?: readonly { readonly id: string; readonly arguments: unknown }[];
  readonly note?: string;
}

function kindOf(entry: JournalEntry): 'ask' | 'approval' {
  return entry.approval ? 'approval' : 'ask';
}

function invalid(field: string, message: string): Error {
  return Errors.INVALID_REQUEST.withData([{ location: 'body', field, message }], `${field}: ${message}`);
}

/** What `calls` of an approve must meet: each item one of the proposed calls, its arguments its tool's parameters. */
function approvalSchema(calls: readonly ProposedCall[]): Record<string, unknown> {
  return {
    type: 'array',
    items: {
      oneOf: calls.map((c) => ({
        type: 'object',
        properties: { id: { const: c.id }, arguments: c.parameters },
        required: ['id', 'arguments'],
        additionalProperties: false,
      })),
    },
  };
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
const validators = new WeakMap<object, ValidateFunction>();

/** An edit's arguments against the tool's parameters, as the model's are checked: 422 naming each field. */
function checkArguments(parameters: Readonly<Record<string, unknown>>, value: unknown, field: string): void {
  let validate = validators.get(parameters);
  if (!validate) {
    validate = ajv.compile(parameters);
    validators.set(parameters, validate);
  }
  if (validate(value)) return;
  const errors = (validate.errors ?? []).map((e) => {
    const missing = e.keyword === 'required' ? `/${String((e.params as { missingProperty?: string }).missingProperty)}` : '';
    return { location: 'body' as const, field: `${field}${(e.instancePath + missing).replace(/\//g, '.')}`, message: e.message ?? 'is invalid' };
  });
  throw Errors.INVALID_REQUEST.withData(errors, errors.map((e) => `${e.field} ${e.message}`).join('; '));
}

/** A person's note, refused (422 naming `note`) when no store could keep it as given. */
function storableNote(note: string | null): string | null {
  const problem = note === null ? null : unstorableText(note, 'note');
  if (problem) throw Errors.INVALID_REQUEST.withData([{ location: 'body', ...problem }], `${problem.field} ${problem.message}`);
  return note;
}

/** How a closed ask ended, for a 409's text. */
function outcomeText(entry: JournalEntry): string {
  if (entry.state === 'ACKED') return entry.closedBy === 'timeout' ? 'expired' : 'answered';
  if (entry.state === 'FAILED') return entry.failureReason === 'timeout' ? 'expired' : (entry.failureReason ?? 'failed');
  return entry.state;
}
