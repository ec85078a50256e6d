import { useState, type FormEvent } from 'react';
import { compact } from './search';

/**
 * Named filters an operator saves and picks again (Temporal's saved views). They are kept in
 * this browser's localStorage, per list: a view is a preference of whoever sits at the console,
 * and the server has no place for one (tokens are shared by name, not people, and its stores
 * keep the organism's state, not the console's); a view is only a URL query, so sharing one is
 * sharing the link.
 */
interface SavedView {
  name: string;
  search: Record<string, string>;
}

const key = (list: string) => `organism.console.views.${list}`;

function load(list: string): SavedView[] {
  try {
    const parsed: unknown = JSON.parse(localStorage.getItem(key(list)) ?? '[]');
    return Array.isArray(parsed) ? parsed.filter((v): v is SavedView => typeof v?.name === 'string' && typeof v?.search === 'object' && v.search !== null) : [];
  } catch {
    return [];
  }
}

export function SavedViews<S extends object>({ list, search, onApply }: { list: string; search: S; onApply: (search: S) => void }) {
  const [views, setViews] = useState<SavedView[]>(() => load(list));
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState('');
  const store = (next: SavedView[]) => {
    setViews(next);
    localStorage.setItem(key(list), JSON.stringify(next));
  };
  const save = (e: FormEvent) => {
    e.preventDefault();
    const n = name.trim();
    if (!n) return;
    store([...views.filter((v) => v.name !== n), { name: n, search: compact(search) as Record<string, string> }]);
    setChosen(n);
    setName('');
  };
  const pickView = (n: string) => {
    setChosen(n);
    const v = views.find((x) => x.name === n);
    if (v) onApply(v.search as S);
  };
  return (
    <div className="toolbar saved-views">
      <label>
        Saved view
        <select value={chosen} onChange={(e) => pickView(e.target.value)}>
          <option value="">—</option>
          {views.map((v) => (
            <option key={v.name}>{v.name}</option>
          ))}
        </select>
      </label>
      {chosen && (
        <button type="button" onClick={() => (store(views.filter((v) => v.name !== chosen)), setChosen(''))}>
          Delete view
        </button>
      )}
      <form onSubmit={save} className="inline">
        <label>
          View name
          <input value={name} onChange={(e) => setName(e.target.value)} placeholder="name this filter" />
        </label>
        <button type="submit" disabled={!name.trim()}>
          Save view
        </button>
      </form>
    </div>
  );
}
