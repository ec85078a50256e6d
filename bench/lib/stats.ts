/** Small numeric helpers shared by the scenarios. */

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Nearest-rank percentile (p in 0..100) of unsorted samples. */
export function percentile(values: ArrayLike<number>, p: number): number {
  const n = values.length;
  if (n === 0) return Number.NaN;
  const sorted = Float64Array.from(values as ArrayLike<number>).sort();
  const rank = Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1));
  return sorted[rank]!;
}

/** Rounds to a few significant digits for reports (keeps small figures readable). */
export function sig(value: number, digits = 3): number {
  if (!Number.isFinite(value) || value === 0) return value;
  const magnitude = Math.floor(Math.log10(Math.abs(value)));
  const factor = 10 ** (digits - 1 - magnitude);
  return Math.round(value * factor) / factor;
}

/** Monotonic milliseconds with sub-millisecond resolution. */
export const nowMs = (): number => performance.now();

/** Wall clock in milliseconds with sub-millisecond resolution, comparable across processes. */
export const wallMs = (): number => performance.timeOrigin + performance.now();

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Yields to the event loop (lets group commits and timers run). */
export const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Polls `check` until it is truthy; throws after `timeoutMs` (every wait in the suite is bounded). */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string, everyMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
