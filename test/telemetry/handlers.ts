/** Code listeners of the telemetry tests (loaded by absolute path from the test organism). */
import { trace } from '@opentelemetry/api';

/** Logs the span the OpenTelemetry API sees as active in the handler, after an await (none without a context manager). */
export async function activeSpan(_payload: Record<string, unknown>, ctx: { log: { info(msg: string, data?: Record<string, unknown>): void } }) {
  await new Promise((resolve) => setTimeout(resolve, 1));
  ctx.log.info('active span', { activeSpanId: trace.getActiveSpan()?.spanContext().spanId ?? null });
  return undefined;
}

/** Sends to a listener it may not address: the pump refuses it (peer denial). */
export function sneak() {
  return { to: 'echo', payload: { text: 'sneaky' } };
}

/** Passes the text on to its peer (one hop of a chain). */
export function relay(payload: Record<string, unknown>, ctx: { peers: readonly string[]; log: { info(msg: string): void } }) {
  ctx.log.info('relaying');
  const next = ctx.peers[0];
  return next ? { to: next, payload: { text: `${String(payload['text'])}>` } } : undefined;
}

/** Addresses a listener that does not exist (its name must not become a label value). */
export function stray(payload: Record<string, unknown>) {
  return { to: `nobody-${String(payload['text'])}`, payload: { text: 'lost' } };
}

/** Holds its delivery until the organism stops (then it stays DISPATCHED in the journal). */
export function hold(_payload: Record<string, unknown>, ctx: { signal: AbortSignal }) {
  return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true }));
}

/** Always fails. */
export function fail() {
  throw new Error('failing on purpose');
}

/** On its first attempt holds until the organism stops; redelivered, it relays like `relay`. */
export function holdOnce(payload: Record<string, unknown>, ctx: { attempt: number; signal: AbortSignal; peers: readonly string[]; log: { info(msg: string): void } }) {
  if (ctx.attempt > 1) return relay(payload, ctx);
  return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true }));
}
