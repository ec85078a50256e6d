import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useEffect, useMemo, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { api, type InboxItem, type JsonSchema } from '../api';
import { Pager, ThreadLink } from '../lists';
import { useLive } from '../live';
import { answerChoices, useValueEditor, usePayloadEditor, type Built } from '../payload-form';
import { useCanAnswer, useRefetchOn, useSession } from '../session';
import { useTick } from '../tick';
import { ErrorBox, fmt, Json, Loading } from '../ui';

const PAGE = 20;

/** Inbox frames (any item opening or closing) refresh the lists that show items. */
export const isInboxFrame = (f: { event: string }): boolean => f.event === 'inbox_opened' || f.event === 'inbox_closed';

/**
 * The answer form of one item: the payload generated from `answerSchema` (or, for a peer, from
 * `peerSchemas`), the target (the asker or one of the listener's peers) and a note.
 */
function AnswerForm({ item }: { item: InboxItem }) {
  const qc = useQueryClient();
  const peers = Object.keys(item.peerSchemas);
  const [to, setTo] = useState('');
  const [note, setNote] = useState('');
  // Each target's schema comes with the item (approvers may not read GET /capabilities).
  const askerChoices = useMemo(() => answerChoices(item.answerSchema), [item.answerSchema]);
  const peerSchema = to === '' ? undefined : item.peerSchemas[to];
  const peerChoices = useMemo(() => (peerSchema ? answerChoices(peerSchema) : []), [peerSchema]);
  const payload = usePayloadEditor(to === '' ? askerChoices : peerChoices);
  const answer = useMutation({
    mutationFn: (body: { payload: unknown; to?: string; note?: string }) => api.answer(item.id, body),
    onSettled: () => qc.invalidateQueries({ queryKey: ['inbox'] }),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const body = payload.build();
    if (body === null) return;
    answer.mutate({ payload: body, ...(to ? { to } : {}), ...(note.trim() ? { note: note.trim() } : {}) });
  };
  return (
    <form onSubmit={submit} className="inject" aria-label={`Answer ${item.id}`}>
      {peers.length > 0 && (
        <label>
          Send to
          <select value={to} onChange={(e) => setTo(e.target.value)}>
            <option value="">{item.from} (reply to the asker)</option>
            {peers.map((p) => (
              <option key={p} value={p}>
                {p} (peer)
              </option>
            ))}
          </select>
        </label>
      )}
      {payload.editor}
      <label>
        Note (kept in the journal)
        <input value={note} onChange={(e) => setNote(e.target.value)} />
      </label>
      <ErrorBox error={answer.error} />
      <button type="submit" disabled={!payload.ready || answer.isPending}>
        Answer
      </button>
    </form>
  );
}

/** Rejects an item with a note: an ask fails (rejected) and the asker gets a SystemError; an approval's model hears the refusal and answers again. */
function RejectForm({ item }: { item: InboxItem }) {
  const qc = useQueryClient();
  const [note, setNote] = useState('');
  const reject = useMutation({
    mutationFn: () => api.reject(item.id, note.trim()),
    onSettled: () => qc.invalidateQueries({ queryKey: ['inbox'] }),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    reject.mutate();
  };
  return (
    <form onSubmit={submit} className="inline" aria-label={`Reject ${item.id}`}>
      <label>
        Reason for rejecting
        <input value={note} onChange={(e) => setNote(e.target.value)} required />
      </label>
      <button type="submit" className="danger" disabled={note.trim() === '' || reject.isPending}>
        Reject
      </button>
      <ErrorBox error={reject.error} />
    </form>
  );
}

/** How long an item has waited, and until when it may wait. */
function Age({ item }: { item: InboxItem }) {
  useTick(1000);
  const left = item.expiresAt ? (Date.parse(item.expiresAt) - Date.now()) / 1000 : null;
  return (
    <span className="muted">
      waiting {fmt.duration((Date.now() - Date.parse(item.createdAt)) / 1000)}
      {item.expiresAt && (
        <>
          {' '}
          · expires {fmt.dateTime(item.expiresAt)} {left !== null && left > 0 ? `(in ${fmt.duration(left)})` : '(due)'}
        </>
      )}
    </span>
  );
}

type ProposedCall = NonNullable<InboxItem['proposedCalls']>[number];

/** Each proposed call's parameters, by call id, from an approval's answerSchema (items: oneOf `{id: {const}, arguments}`). */
function callSchemas(schema: JsonSchema): Map<string, JsonSchema> {
  const out = new Map<string, JsonSchema>();
  for (const option of schema.items?.oneOf ?? []) {
    const id = option.properties?.['id']?.const;
    const args = option.properties?.['arguments'];
    if (typeof id === 'string' && args) out.set(id, args);
  }
  return out;
}

/** One proposed call's arguments, editable: registers how to build them with the approve form. */
function CallEditor({ call, schema, register }: { call: ProposedCall; schema: JsonSchema | undefined; register: (id: string, build: () => Built) => void }) {
  const editor = useValueEditor(schema, call.arguments, 'arguments');
  useEffect(() => {
    register(call.id, editor.build);
  });
  return <>{editor.editor}</>;
}

/** A proposed call: the tool and its arguments (as proposed, or being edited). */
function CallView({ call, index, children }: { call: ProposedCall; index: number; children?: ReactNode }) {
  return (
    <section className="proposed-call" aria-label={`Call ${index + 1}: ${call.name}`}>
      <div>
        <span className="muted">call {index + 1}</span> <code>{call.name}</code>
      </div>
      {children ?? <Json value={call.arguments} />}
    </section>
  );
}

/**
 * Approves an approval's calls: as proposed, or (**Edit**) with each call's arguments edited in
 * the form generated from its parameters (JSON text when it has none), prefilled with the model's.
 */
function ApproveForm({ item }: { item: InboxItem }) {
  const qc = useQueryClient();
  const calls = item.proposedCalls ?? [];
  const schemas = useMemo(() => callSchemas(item.answerSchema), [item.answerSchema]);
  const [editing, setEditing] = useState(false);
  const [note, setNote] = useState('');
  const builders = useRef(new Map<string, () => Built>());
  const approve = useMutation({
    mutationFn: (body: { calls?: Array<{ id: string; arguments: unknown }>; note?: string }) => api.approve(item.id, body),
    onSettled: () => qc.invalidateQueries({ queryKey: ['inbox'] }),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const edited: Array<{ id: string; arguments: unknown }> = [];
    if (editing) {
      for (const c of calls) {
        const built = builders.current.get(c.id)?.() ?? null;
        if (built === null) return; // the editor says why
        edited.push({ id: c.id, arguments: built.value });
      }
    }
    approve.mutate({ ...(editing ? { calls: edited } : {}), ...(note.trim() ? { note: note.trim() } : {}) });
  };
  const register = (id: string, build: () => Built) => builders.current.set(id, build);
  return (
    <form onSubmit={submit} className="inject" aria-label={`Approve ${item.id}`}>
      {calls.map((c, i) => (
        <CallView key={c.id} call={c} index={i}>
          {editing ? <CallEditor call={c} schema={schemas.get(c.id)} register={register} /> : undefined}
        </CallView>
      ))}
      <label>
        Note (kept in the journal)
        <input value={note} onChange={(e) => setNote(e.target.value)} />
      </label>
      <ErrorBox error={approve.error} />
      <div className="buttons">
        <button type="submit" disabled={approve.isPending}>
          {editing ? 'Approve edited' : 'Approve'}
        </button>
        <button
          type="button"
          onClick={() => {
            builders.current.clear();
            approve.reset();
            setEditing(!editing);
          }}
        >
          {editing ? 'Cancel edit' : 'Edit'}
        </button>
      </div>
    </form>
  );
}

/**
 * A pending approval: the agent, the thread, the calls it proposed; approve (as proposed or
 * edited) and reject with a note for an approver or operator, the calls read-only for a viewer.
 */
function ApprovalCard({ item, showThread }: { item: InboxItem; showThread: boolean }) {
  const canAnswer = useCanAnswer();
  const { role } = useSession();
  const calls = item.proposedCalls ?? [];
  return (
    <article className="inbox-item approval" aria-label={`Inbox item ${item.id}`}>
      <div className="msg-head">
        <strong>{item.listener}</strong> asks to run {calls.length === 1 ? 'a tool call' : `${calls.length} tool calls`} <Age item={item} />
        {showThread && (
          <span>
            {' '}
            · thread <ThreadLink id={item.threadId} short />
          </span>
        )}
      </div>
      <details>
        <summary className="muted">
          while handling <code>{item.payloadType}</code> from {item.from}
        </summary>
        <Json value={item.payload} />
      </details>
      {canAnswer ? (
        <div className="inbox-actions">
          <ApproveForm item={item} />
          <RejectForm item={item} />
        </div>
      ) : (
        <>
          {calls.map((c, i) => (
            <CallView key={c.id} call={c} index={i} />
          ))}
          <p className="muted">Read-only: your token has the {role} role (approving needs the approver or operator role).</p>
        </>
      )}
    </article>
  );
}

/**
 * One open item: its thread, who asked, what, for how long; the answer (or approve) and reject
 * forms for a role that may use them (approver, operator), nothing to act on for a viewer.
 */
export function InboxItemCard({ item, showThread = true }: { item: InboxItem; showThread?: boolean }) {
  if (item.kind === 'approval') return <ApprovalCard item={item} showThread={showThread} />;
  return <AskCard item={item} showThread={showThread} />;
}

function AskCard({ item, showThread }: { item: InboxItem; showThread: boolean }) {
  const canAnswer = useCanAnswer();
  const { role } = useSession();
  return (
    <article className="inbox-item" aria-label={`Inbox item ${item.id}`}>
      <div className="msg-head">
        <strong>{item.from}</strong> asks <strong>{item.listener}</strong> <code>{item.payloadType}</code> <Age item={item} />
        {showThread && (
          <span>
            {' '}
            · thread <ThreadLink id={item.threadId} short />
          </span>
        )}
      </div>
      <Json value={item.payload} />
      {canAnswer ? (
        <div className="inbox-actions">
          <AnswerForm item={item} />
          <RejectForm item={item} />
        </div>
      ) : (
        <p className="muted">Read-only: your token has the {role} role (answering needs the approver or operator role).</p>
      )}
    </article>
  );
}

/** The open items of one thread, inline in its timeline (under the ask's message). */
export function useThreadInbox(threadId: string): Map<string, InboxItem> {
  const items = useQuery({ queryKey: ['inbox', 'thread', threadId], queryFn: () => api.inbox({ threadId, limit: 100, offset: 0 }) });
  useRefetchOn(
    (f) => isInboxFrame(f) && ((f as { threadId?: string }).threadId === threadId || (f as { item?: { threadId?: string } }).item?.threadId === threadId),
    [['inbox', 'thread', threadId]],
    300,
  );
  return useMemo(() => new Map((items.data?.items ?? []).map((i) => [i.messageId, i])), [items.data]);
}

/** The inbox: asks and tool-call approvals waiting for people, oldest first. */
export function InboxView() {
  const [offset, setOffset] = useState(0);
  const live = useLive();
  const items = useQuery({ queryKey: ['inbox', 'list', offset], queryFn: () => api.inbox({ limit: PAGE, offset }) });
  useRefetchOn(isInboxFrame, [['inbox', 'list']], 300);
  return (
    <div>
      <h1>Inbox</h1>
      <p className="muted">
        Asks to <code>builtin:human</code> listeners and tool calls waiting for approval, oldest first: {live.inbox ? `${fmt.int(live.inbox.open)} open` : '…'}. Answering an ask sends the
        listener's message; approving a call runs it (as proposed or edited); rejecting one lets the model answer again. Either continues the thread; the first decision wins.
      </p>
      <ErrorBox error={items.error} />
      {!items.data ? (
        <Loading what="inbox" />
      ) : items.data.items.length === 0 ? (
        <p>Nothing waits for a person.</p>
      ) : (
        <ol className="inbox" aria-label="Open items">
          {items.data.items.map((item) => (
            <li key={item.id}>
              <InboxItemCard item={item} />
            </li>
          ))}
        </ol>
      )}
      {items.data && items.data.total > PAGE && <Pager offset={offset} page={PAGE} total={items.data.total} onOffset={setOffset} />}
    </div>
  );
}

/** The navigation's link to the inbox, with the live count of open items. */
export function InboxNavLink() {
  const live = useLive();
  const open = live.inbox?.open ?? 0;
  return (
    <Link to="/inbox" activeProps={{ className: 'active', 'aria-current': 'page' }} aria-label={`Inbox (${open} open)`}>
      Inbox{' '}
      <span className={`count-badge${open > 0 ? ' has-items' : ''}`} data-testid="inbox-count">
        {open}
      </span>
    </Link>
  );
}
