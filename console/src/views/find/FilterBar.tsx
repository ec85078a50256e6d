import { useEffect, useState, type FormEvent } from 'react';
import { AgentFilter, Filter } from '../../lists';
import { type AnySearch, compact, fromLocalInput, toLocalInput } from './search';

/**
 * The filter of a list: status (or delivery state), agent, time range and text, and for the
 * journal a thread. Every change goes to `onChange` (the view puts it in the URL); the text and
 * the thread id apply on Search (Enter), the others at once.
 */
export function FilterBar({
  search,
  onChange,
  statusKey,
  statusLabel,
  statuses,
  withThread = false,
}: {
  search: AnySearch;
  onChange: (next: AnySearch) => void;
  statusKey: 'status' | 'state';
  statusLabel: string;
  statuses: readonly string[];
  withThread?: boolean;
}) {
  const [text, setText] = useState(search.text ?? '');
  const [threadId, setThreadId] = useState(search.threadId ?? '');
  // A saved view or the back button changes the URL: the drafts follow it.
  useEffect(() => setText(search.text ?? ''), [search.text]);
  useEffect(() => setThreadId(search.threadId ?? ''), [search.threadId]);
  const set = (patch: AnySearch) => onChange(compact({ ...search, ...patch }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    set({ text: text || undefined, ...(withThread ? { threadId: threadId.trim() || undefined } : {}) });
  };
  const any = Object.values(compact(search)).length > 0;
  return (
    <form className="toolbar filter-bar" onSubmit={submit} aria-label="Filter">
      <Filter label={statusLabel} value={search[statusKey] ?? ''} options={statuses} onChange={(v) => set({ [statusKey]: v || undefined })} />
      <AgentFilter value={search.agent ?? ''} onChange={(a) => set({ agent: a || undefined })} />
      <label>
        From
        <input type="datetime-local" value={toLocalInput(search.startTime)} onChange={(e) => set({ startTime: fromLocalInput(e.target.value) })} />
      </label>
      <label>
        To
        <input type="datetime-local" value={toLocalInput(search.endTime)} onChange={(e) => set({ endTime: fromLocalInput(e.target.value) })} />
      </label>
      {withThread && (
        <label>
          Thread
          <input value={threadId} onChange={(e) => setThreadId(e.target.value)} placeholder="thread id" />
        </label>
      )}
      <label>
        Text
        <input type="search" value={text} maxLength={200} onChange={(e) => setText(e.target.value)} placeholder="in payloads and errors" />
      </label>
      <button type="submit">Search</button>
      {any && (
        <button type="button" onClick={() => onChange({})}>
          Clear filter
        </button>
      )}
    </form>
  );
}
