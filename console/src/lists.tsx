// Pieces the list views share: filters, the pager, the link to a thread.
import { Link } from '@tanstack/react-router';
import { useLive } from './live';
import { fmt } from './ui';

/** A labelled select of one of `options`, or "any" (the empty string). */
export function Filter({ label, value, options, onChange }: { label: string; value: string; options: readonly string[]; onChange: (value: string) => void }) {
  return (
    <label>
      {label}
      <select value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">any</option>
        {options.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    </label>
  );
}

/** A filter on one agent, any of those the live feed knows. */
export function AgentFilter({ value, onChange }: { value: string; onChange: (agent: string) => void }) {
  const live = useLive();
  return <Filter label="Agent" value={value} options={[...live.agents.keys()]} onChange={onChange} />;
}

/** Previous / next over a list the API serves `page` rows at a time from `offset`. */
export function Pager({ offset, page, total, onOffset }: { offset: number; page: number; total: number; onOffset: (offset: number) => void }) {
  return (
    <div className="pager">
      <button type="button" disabled={offset === 0} onClick={() => onOffset(Math.max(0, offset - page))}>
        Previous page
      </button>
      <span>{total === 0 ? 'none' : `${offset + 1}–${Math.min(offset + page, total)} of ${fmt.int(total)}`}</span>
      <button type="button" disabled={offset + page >= total} onClick={() => onOffset(offset + page)}>
        Next page
      </button>
    </div>
  );
}

/** A thread's id (shortened with `short`), linking to its page. */
export function ThreadLink({ id, short = false }: { id: string; short?: boolean }) {
  return (
    <Link to="/threads/$threadId" params={{ threadId: id }}>
      <code>{short ? fmt.short(id) : id}</code>
    </Link>
  );
}
