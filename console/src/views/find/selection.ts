import { useEffect, useState } from 'react';

/**
 * Rows checked in a list, or "all N matching" the filter. A new filter (`filterKey`) clears
 * both: a selection made under one filter never acts under another.
 */
export function useSelection(filterKey: string) {
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [allMatching, setAllMatching] = useState(false);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the filter's identity is what resets the selection
  useEffect(() => {
    setSelected(new Set());
    setAllMatching(false);
  }, [filterKey]);
  return {
    selected,
    allMatching,
    setAllMatching,
    toggle(id: string) {
      const next = new Set(selected);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      setSelected(next);
      setAllMatching(false);
    },
    setPage(ids: readonly string[], on: boolean) {
      const next = new Set(selected);
      for (const id of ids) on ? next.add(id) : next.delete(id);
      setSelected(next);
      setAllMatching(false);
    },
    clear() {
      setSelected(new Set());
      setAllMatching(false);
    },
  };
}
