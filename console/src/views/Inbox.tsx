import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useMemo, useState, type FormEvent } from 'react';
import { api, type InboxItem } from '../api';
import { Pager, ThreadLink } from '../lists';
import { useLive } from '../live';
import { answerChoices, usePayloadEditor } from '../payload-form';
import { useCanAnswer, useIsOperator, useRefetchOn, useSession } from '../session';
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

/** Rejects an item with a note: the ask fails (rejected) and the asker gets a SystemError. */
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

/**
 * One open item: its thread, who asked, what, for how long; the answer and reject forms for a
 * role that may use them (approver, operator), nothing to act on for a viewer.
 */
export function InboxItemCard({ item, showThread = true }: { item: InboxItem; showThread?: boolean }) {
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

/** The inbox: asks waiting for people, oldest first. */
export function InboxView() {
  const [offset, setOffset] = useState(0);
  const live = useLive();
  const items = useQuery({ queryKey: ['inbox', 'list', offset], queryFn: () => api.inbox({ limit: PAGE, offset }) });
  useRefetchOn(isInboxFrame, [['inbox', 'list']], 300);
  return (
    <div>
      <h1>Inbox</h1>
      <p className="muted">
        Asks to <code>builtin:human</code> listeners, oldest first: {live.inbox ? `${fmt.int(live.inbox.open)} open` : '…'}. Answering one sends the listener's message and continues its
        thread; the first answer wins.
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
