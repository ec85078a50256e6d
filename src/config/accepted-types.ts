import type { ListenerConfig } from './types.js';

/** The payload types a listener accepts: `payload: [A, B]` as written, or the one type of `payload: A`. */
export function acceptedTypes(listener: Pick<ListenerConfig, 'payload' | 'payloadTypes'>): readonly string[] {
  return listener.payloadTypes ?? [listener.payload];
}
