import { useEffect, useState } from 'react';

/** Re-renders every `ms` (local clock only: rolling rates and "ago" texts; never a server call). */
export function useTick(ms: number): void {
  const [, set] = useState(0);
  useEffect(() => {
    const t = setInterval(() => set((n) => n + 1), ms);
    return () => clearInterval(t);
  }, [ms]);
}
