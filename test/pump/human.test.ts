import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { send } from '../../src/core/handler.js';
import { SYSTEM_ERROR_TYPE } from '../../src/core/message.js';
import type { OrganismEvent } from '../../src/events/types.js';
import { Errors } from '../../src/errors/catalogue.js';
import { Organism } from '../../src/organism/organism.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { definePayload } from '../../src/payload/define.js';
import { eventually, listener, loaded, Num, startOrganism, Text } from './harness.js';
import type { ResolvedListener } from '../../src/config/types.js';
import type { HumanListenerConfig } from '../../src/config/types.js';

const Decision = definePayload('Decision', { approved: 'boolean', comment: 'string' });
const TYPES = [Text, Num, Decision];

const dirs: string[] = [];
const running: Organism[] = [];
afterEach(async () => {
  for (const o of running.splice(0)) await o.stop().catch(() => {});
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

type Backend = 'memory' | 'sqlite';

function storageFor(backend: Backend, dir?: string) {
  if (backend === 'memory') return {};
  const dataDir = dir ?? mkdtempSync(path.join(os.tmpdir(), 'organism-human-'));
  if (!dir) dirs.push(dataDir);
  return { storage: openSqliteStorage({ dataDir }) };
}

/** The SystemError the asker was sent (recorded in its history: system notices run no handler). */
function noticeTo(events: readonly OrganismEvent[], to: string) {
  const e = events.find((x) => x.type === 'message' && x.state === 'ACKED' && x.message.to === to && x.message.payloadType === SYSTEM_ERROR_TYPE);
  return e?.type === 'message' ? e.message : undefined;
}

/** A code listener `intake` that asks `desk` (a human listener) and records what comes back. */
function deskOrganism(backend: Backend, human: HumanListenerConfig = { timeoutSeconds: null, onTimeout: 'fail' }, dir?: string) {
  const got: Array<{ type: string; payload: Record<string, unknown>; from: string }> = [];
  const listeners: ResolvedListener[] = [
    listener('intake', {
      payloadTypes: ['Text', 'Decision', 'Num'],
      peers: ['desk'],
      handler: (payload, ctx) => {
        if (ctx.payloadType === 'Text' && ctx.from === 'api') return send('desk', { text: `approve? ${String(payload['text'])}` }, 'Text');
        got.push({ type: ctx.payloadType, payload, from: ctx.from });
        return undefined;
      },
    }),
    listener('desk', { payload: 'Text', peers: ['audit'], human }),
    listener('audit', { payload: 'Num', handler: (payload, ctx) => void got.push({ type: ctx.payloadType, payload, from: ctx.from }) }),
  ];
  return { listeners, got, options: storageFor(backend, dir) };
}

async function start(backend: Backend, human?: HumanListenerConfig, dir?: string) {
  const d = deskOrganism(backend, human, dir);
  const organism = new Organism(loaded(d.listeners, {}, TYPES), d.options);
  const events: OrganismEvent[] = [];
  organism.bus.on((e) => events.push(e));
  await organism.start();
  running.push(organism);
  return { organism, events, got: d.got };
}

async function openAsk(organism: Organism) {
  const { threadId } = await organism.inject('intake', { Text: { text: 'refund 40' } });
  const page = await eventually(async () => {
    const p = await organism.inbox.list({ limit: 10, offset: 0 });
    return p.total > 0 ? p : null;
  });
  return { threadId, item: page.items[0]! };
}

for (const backend of ['memory', 'sqlite'] as const) {
  describe(`builtin:human listeners (${backend})`, () => {
    it('parks an ask AWAITING with the thread waiting, holding no handler slot; an answer replies to the asker exactly once', async () => {
      const { organism, events, got } = await start(backend);
      const { threadId, item } = await openAsk(organism);
      expect(item).toMatchObject({ kind: 'ask', threadId, listener: 'desk', from: 'intake', payloadType: 'Text', payload: { text: 'approve? refund 40' }, expiresAt: null });
      expect(item.answerSchema).toHaveProperty('oneOf');
      expect((await organism.storage.journal.get(item.id))?.state).toBe('AWAITING');
      await eventually(async () => (await organism.thread(threadId))?.status === 'waiting', 5_000, 'thread waiting');
      expect(organism.agent('desk').state).not.toBe('processing');
      expect((await organism.storage.journal.stats()).counts.AWAITING).toBe(1);
      expect(await organism.inbox.counts()).toEqual({ open: 1, asks: 1, approvals: 0 });
      await eventually(() => events.some((e) => e.type === 'inbox_opened' && e.item.id === item.id), 5_000, 'inbox_opened');

      const sent = await organism.inbox.answer(item.id, { payload: { Decision: { approved: true, comment: 'ok' } }, note: 'fine' }, 'alice');
      expect(sent).toMatchObject({ from: 'desk', to: 'intake', payloadType: 'Decision', parentId: item.id, threadId });
      await eventually(() => got.length === 1, 5_000, 'the answer delivered');
      expect(got[0]).toEqual({ type: 'Decision', payload: { approved: true, comment: 'ok' }, from: 'desk' });
      const entry = await organism.storage.journal.get(item.id);
      expect(entry).toMatchObject({ state: 'ACKED', closedBy: 'alice', closedNote: 'fine' });
      await eventually(async () => (await organism.thread(threadId))?.status === 'completed', 5_000, 'thread completed');
      expect(events.find((e) => e.type === 'inbox_closed')).toMatchObject({ closed: { id: item.id, outcome: 'answered', by: 'alice', sentId: sent.id } });
      expect((await organism.inbox.list({ limit: 10, offset: 0 })).total).toBe(0);

      const again = organism.inbox.answer(item.id, { payload: { Decision: { approved: false, comment: 'no' } } }, 'bob');
      await expect(again).rejects.toSatisfy((e: unknown) => Errors.INBOX_ITEM_CLOSED.is(e));
      expect(got).toHaveLength(1);
    });

    it('refuses an answer that does not validate (422 naming the field) or goes to a non-peer, and leaves the ask open', async () => {
      const { organism } = await start(backend);
      const { item } = await openAsk(organism);
      const bad = await organism.inbox.answer(item.id, { payload: { Decision: { approved: 'yes', comment: 'x' } } }, 'alice').catch((e: unknown) => e);
      expect(Errors.INVALID_PAYLOAD.is(bad)).toBe(true);
      expect(JSON.stringify((bad as { data: unknown }).data)).toContain('approved');
      const untyped = await organism.inbox.answer(item.id, { payload: { approved: true, comment: 'x' } }, 'alice').catch((e: unknown) => e);
      expect(Errors.PAYLOAD_TYPE_REQUIRED.is(untyped)).toBe(true);
      const stranger = await organism.inbox.answer(item.id, { payload: { text: 'x' }, to: 'intruder' }, 'alice').catch((e: unknown) => e);
      expect(Errors.INVALID_REQUEST.is(stranger)).toBe(true);
      expect(JSON.stringify((stranger as { data: unknown }).data)).toContain('"field":"to"');
      expect((await organism.storage.journal.get(item.id))?.state).toBe('AWAITING');
    });

    it("an answer may go to one of the listener's peers instead", async () => {
      const { organism, got } = await start(backend);
      const { item } = await openAsk(organism);
      const sent = await organism.inbox.answer(item.id, { payload: { n: 7 }, to: 'audit' }, 'alice');
      expect(sent).toMatchObject({ from: 'desk', to: 'audit', payloadType: 'Num' });
      await eventually(() => got.length === 1, 5_000, 'the send delivered');
      expect(got[0]).toEqual({ type: 'Num', payload: { n: 7 }, from: 'desk' });
    });

    it('a rejection fails the ask (rejected, with the note) and sends the asker the SystemError', async () => {
      const { organism, got, events } = await start(backend);
      const { threadId, item } = await openAsk(organism);
      const closed = await organism.inbox.reject(item.id, 'not without a receipt', 'bob');
      expect(closed).toMatchObject({ outcome: 'rejected', by: 'bob', note: 'not without a receipt' });
      const notice = await eventually(() => noticeTo(events, 'intake'), 5_000, 'the SystemError delivered');
      expect(notice.payload).toMatchObject({ reason: 'rejected', messageId: item.id });
      expect(String(notice.payload['error'])).toContain('not without a receipt');
      expect(got).toHaveLength(0);
      const entry = await organism.storage.journal.get(item.id);
      expect(entry).toMatchObject({ state: 'FAILED', failureReason: 'rejected', closedBy: 'bob', closedNote: 'not without a receipt' });
      expect(events.some((e) => e.type === 'journal_failed' && e.reason === 'rejected')).toBe(true);
      await eventually(async () => (await organism.thread(threadId))?.status === 'error', 5_000, 'thread in error');
      await expect(organism.inbox.reject(item.id, 'again', 'bob')).rejects.toSatisfy((e: unknown) => Errors.INBOX_ITEM_CLOSED.is(e));
    });

    it('killing a waiting thread closes its asks (FAILED killed); answering then is a 409', async () => {
      const { organism, got } = await start(backend);
      const { threadId, item } = await openAsk(organism);
      await eventually(async () => (await organism.thread(threadId))?.status === 'waiting', 5_000, 'thread waiting');
      const record = await organism.killThread(threadId);
      expect(record.status).toBe('killed');
      expect(await organism.storage.journal.get(item.id)).toMatchObject({ state: 'FAILED', failureReason: 'killed', closedBy: 'kill' });
      await expect(organism.inbox.answer(item.id, { payload: { Decision: { approved: true, comment: '' } } }, 'alice')).rejects.toSatisfy((e: unknown) => Errors.INBOX_ITEM_CLOSED.is(e));
      expect(got).toHaveLength(0);
      expect((await organism.thread(threadId))?.status).toBe('killed');
    });

    it('pausing the human listener holds new asks PENDING; resuming parks them', async () => {
      const { organism } = await start(backend);
      await organism.pauseListener('desk');
      const { threadId } = await organism.inject('intake', { Text: { text: 'refund 5' } });
      const pending = await eventually(async () => {
        const p = await organism.storage.journal.list({ threadId, agent: 'desk', state: 'PENDING', limit: 5, offset: 0 });
        return p.total > 0 ? p.items[0] : null;
      });
      expect((await organism.inbox.list({ limit: 10, offset: 0 })).total).toBe(0);
      await organism.resumeListener('desk');
      await eventually(async () => (await organism.storage.journal.get(pending.message.id))?.state === 'AWAITING', 5_000, 'parked after resume');
    });

    it('on_timeout fail: an unanswered ask fails (timeout) soon after expiresAt and the asker hears it', async () => {
      const { organism, events } = await start(backend, { timeoutSeconds: 0.3, onTimeout: 'fail' });
      const { item } = await openAsk(organism);
      expect(item.expiresAt).not.toBeNull();
      const notice = await eventually(() => noticeTo(events, 'intake'), 5_000, 'the timeout SystemError');
      const entry = await organism.storage.journal.get(item.id);
      expect(entry).toMatchObject({ state: 'FAILED', failureReason: 'timeout', closedBy: 'timeout' });
      expect(entry!.failedAt! - item.expiresAt!).toBeLessThan(1_000);
      expect(notice.payload).toMatchObject({ reason: 'timeout', messageId: item.id });
    });

    it('on_timeout reply: an unanswered ask is answered with the default', async () => {
      const { organism, got } = await start(backend, { timeoutSeconds: 0.3, onTimeout: { reply: { Decision: { approved: false, comment: 'nobody answered' } } } });
      const { item } = await openAsk(organism);
      await eventually(() => got.length === 1, 5_000, 'the default reply');
      expect(got[0]).toEqual({ type: 'Decision', payload: { approved: false, comment: 'nobody answered' }, from: 'desk' });
      expect(await organism.storage.journal.get(item.id)).toMatchObject({ state: 'ACKED', closedBy: 'timeout' });
    });

    it('50 concurrent answers to one ask: exactly one wins, the continuation runs once', async () => {
      const { organism, got } = await start(backend);
      const { item } = await openAsk(organism);
      const results = await Promise.allSettled(
        Array.from({ length: 50 }, (_, i) => organism.inbox.answer(item.id, { payload: { Decision: { approved: true, comment: `#${i}` } } }, `p${i}`)),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results) if (r.status === 'rejected') expect(Errors.INBOX_ITEM_CLOSED.is(r.reason)).toBe(true);
      await eventually(() => got.length === 1, 5_000, 'the answer delivered');
      await new Promise((r) => setTimeout(r, 100));
      expect(got).toHaveLength(1);
    });
  });
}

describe('builtin:human listeners across a restart (sqlite)', () => {
  it('open asks survive a restart unchanged; an overdue one expires promptly after it', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-human-'));
    dirs.push(dataDir);
    const first = await start('sqlite', { timeoutSeconds: 1, onTimeout: 'fail' }, dataDir);
    const { item } = await openAsk(first.organism);
    await first.organism.stop();
    running.splice(running.indexOf(first.organism), 1);
    // Down past its expiry.
    await new Promise((r) => setTimeout(r, 1_200));
    const second = await start('sqlite', { timeoutSeconds: 1, onTimeout: 'fail' }, dataDir);
    await eventually(() => noticeTo(second.events, 'intake'), 5_000, 'the overdue ask expired');
    const entry = await second.organism.storage.journal.get(item.id);
    expect(entry).toMatchObject({ state: 'FAILED', failureReason: 'timeout' });
    expect(entry!.failedAt! - Math.max(item.expiresAt!, second.organism.startedAt!)).toBeLessThan(1_000);
  });

  it('a crash between the park and the thread record: the thread is found waiting at start, not completed', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-human-'));
    dirs.push(dataDir);
    const pre = openSqliteStorage({ dataDir });
    const threadId = 'crashed-thread';
    const ask = {
      id: 'ask-1',
      threadId,
      from: 'intake',
      to: 'desk',
      payloadType: 'Text',
      payload: { text: 'approve?' },
      timestamp: Date.now(),
      parentId: 'root',
      hops: 1,
      metadata: {},
      attempt: 1,
    };
    pre.threads.put({ id: threadId, status: 'active', participants: ['api', 'intake', 'desk'], messageCount: 2, createdAt: Date.now(), lastActivity: Date.now(), error: null, metadata: {} });
    await pre.journal.pending([ask]);
    await pre.journal.awaiting(ask, null);
    pre.close();
    const { organism } = await start('sqlite', undefined, dataDir);
    await eventually(async () => (await organism.thread(threadId))?.status === 'waiting', 5_000, 'the thread waiting');
    expect((await organism.inbox.list({ limit: 10, offset: 0 })).items.map((i) => i.id)).toEqual(['ask-1']);
  });

  it('an open ask is listed after a restart and its thread is still waiting', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-human-'));
    dirs.push(dataDir);
    const first = await start('sqlite', undefined, dataDir);
    const { item, threadId } = await openAsk(first.organism);
    await eventually(async () => (await first.organism.thread(threadId))?.status === 'waiting', 5_000, 'thread waiting');
    await first.organism.stop();
    running.splice(running.indexOf(first.organism), 1);
    const second = await start('sqlite', undefined, dataDir);
    const page = await second.organism.inbox.list({ limit: 10, offset: 0 });
    expect(page.items).toEqual([item]);
    expect((await second.organism.thread(threadId))?.status).toBe('waiting');
    await second.organism.inbox.answer(item.id, { payload: { Decision: { approved: true, comment: '' } } }, 'alice');
    await eventually(() => second.got.length === 1, 5_000, 'the answer delivered');
    await eventually(async () => (await second.organism.thread(threadId))?.status === 'completed', 5_000, 'thread completed');
  });
});

void startOrganism;
