import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import type { ProviderConfig } from '../../config/types.js';
import { Errors, OrganismError } from '../../errors/catalogue.js';
import { errorFromResponse, ProviderHttpError } from '../http-error.js';
import { readUpTo } from '../read-capped.js';

/** Reads the provider's key from its env var at call time (never kept on an object). */
export function apiKey(config: ProviderConfig): string | null {
  return config.apiKeyEnv ? process.env[config.apiKeyEnv] || null : null;
}

/** True when the provider serves `model`: `models` lists names or prefixes; empty = any. */
export function servesModel(config: ProviderConfig, model: string): boolean {
  return config.models.length === 0 || config.models.some((m) => model === m || model.startsWith(m));
}

/** How the provider answered: a server-sent event stream (already handed to `onEvent`), or one JSON object. */
export type PostOutcome = { readonly streamed: true } | { readonly streamed: false; readonly body: object };

/** JSON framing a whole (not streamed) reply may add around its text: escaping may double it, plus 64 KiB of envelope. */
export function wholeBodyLimit(replyLimit: number): number {
  return 2 * replyLimit + 64 * 1024;
}

/** The bad response of a reply past the cap, read no further. */
export function replyTooLarge(what: string): OrganismError {
  return Errors.LLM_BAD_RESPONSE(`${what}; reading stopped and the request was aborted`);
}

/**
 * POSTs JSON with the handler's signal and the provider's timeout. An event stream
 * (`text/event-stream`) is read event by event into `onEvent`; any other 2xx must be a JSON
 * object (a server that ignores `stream: true`). Failures come out classified: non-2xx ->
 * ProviderHttpError; the caller's abort -> ABORTED; the timeout -> LLM_TIMEOUT; no connection or
 * a connection lost mid-stream -> LLM_NETWORK; a 2xx that is not JSON -> LLM_BAD_RESPONSE. None
 * of these texts can contain the request's headers (the key).
 *
 * `replyLimit` (llm.max_reply_bytes) holds while reading, so a hostile or broken server cannot
 * fill memory: a whole body is read up to wholeBodyLimit(replyLimit), one stream event up to the
 * same, and the streamed text and tool calls up to the same by `onEvent`'s assembler (a
 * ReplyMeter). Past a limit the request is aborted (the connection closed) and the attempt fails
 * as a bad response.
 */
export async function postStreaming(
  config: ProviderConfig,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
  onEvent: (event: EventSourceMessage) => void,
  replyLimit: number,
): Promise<PostOutcome> {
  const timeout = AbortSignal.timeout(config.timeoutSeconds * 1000);
  // Aborted on every way out: a reply left unread must not keep its connection (and its bytes) coming.
  const done = new AbortController();
  const bodyLimit = wholeBodyLimit(replyLimit);
  // Errors thrown by onEvent are the provider's verdict on what it read: passed on as they are.
  let verdict: unknown = null;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream, application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.any([signal, timeout, done.signal]),
    });
    if (!res.ok) throw await errorFromResponse(config.name, res, apiKey(config));
    if (/text\/event-stream/i.test(res.headers.get('content-type') ?? '') && res.body) {
      const events = res.body.pipeThrough(eventSizeLimit(bodyLimit)).pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
      for await (const event of events) {
        try {
          onEvent(event);
        } catch (err) {
          verdict = err;
          throw err;
        }
      }
      return { streamed: true };
    }
    const read = await readUpTo(res.body, bodyLimit);
    if (!read.complete) throw replyTooLarge(`the reply body passed ${bodyLimit} bytes (twice llm.max_reply_bytes plus 64 KiB)`);
    const text = read.bytes.toString('utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw Errors.LLM_BAD_RESPONSE(`not JSON (${text.slice(0, 80)})`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw Errors.LLM_BAD_RESPONSE(`not a JSON object (${text.slice(0, 80)})`);
    return { streamed: false, body: parsed };
  } catch (err) {
    if (signal.aborted) throw Errors.ABORTED(String(signal.reason ?? 'aborted'));
    if (timeout.aborted) throw Errors.LLM_TIMEOUT(config.timeoutSeconds);
    if (err === verdict || err instanceof OrganismError || err instanceof ProviderHttpError) throw err;
    if (err instanceof TypeError) throw Errors.LLM_NETWORK(networkReason(err));
    throw err;
  } finally {
    done.abort();
  }
}

/**
 * Passes an event stream through, failing once one event (the bytes up to a blank line) passes
 * `limit`: the event parser would otherwise buffer an endless event whole.
 */
function eventSizeLimit(limit: number): TransformStream<Uint8Array, Uint8Array> {
  let eventBytes = 0;
  let lineBytes = 0;
  let afterCr = false;
  return new TransformStream({
    transform(chunk, controller) {
      for (let i = 0; i < chunk.length; i++) {
        const b = chunk[i]!;
        if (b === 0x0a && afterCr) {
          afterCr = false; // the LF of a CRLF
          continue;
        }
        afterCr = b === 0x0d;
        if (b === 0x0a || b === 0x0d) {
          if (lineBytes === 0) eventBytes = 0; // a blank line ends the event
          lineBytes = 0;
        } else {
          lineBytes++;
          eventBytes++;
        }
      }
      if (eventBytes > limit) throw replyTooLarge(`one stream event passed ${limit} bytes (twice llm.max_reply_bytes plus 64 KiB)`);
      controller.enqueue(chunk);
    },
  });
}

/**
 * Counts the bytes of a streamed reply's text and tool calls, failing once they pass
 * wholeBodyLimit(llm.max_reply_bytes): the same allowance as a whole body, so an answer a little
 * over the cap is still read and refused by the agent with its exact size, and only a flood is cut.
 */
export class ReplyMeter {
  private bytes = 0;
  private readonly limit: number;

  constructor(replyLimit: number) {
    this.limit = wholeBodyLimit(replyLimit);
  }

  add(text: string): void {
    if (text === '') return;
    this.bytes += Buffer.byteLength(text, 'utf8');
    if (this.bytes > this.limit) throw replyTooLarge(`the streamed reply passed ${this.limit} bytes (twice llm.max_reply_bytes plus 64 KiB)`);
  }
}

/** Parses one event's JSON data; anything else is the provider's bad response. */
export function eventJson(event: EventSourceMessage): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(event.data);
  } catch {
    throw Errors.LLM_BAD_RESPONSE(`stream event is not JSON (${event.data.slice(0, 80)})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw Errors.LLM_BAD_RESPONSE(`stream event is not a JSON object (${event.data.slice(0, 80)})`);
  }
  return parsed as Record<string, unknown>;
}

/** fetch says only "fetch failed"; the reason (ECONNREFUSED, ...) is in its cause. */
function networkReason(err: TypeError): string {
  const cause = err.cause as { code?: unknown; message?: unknown } | undefined;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (cause && typeof cause.message === 'string') return cause.message;
  return err.message;
}

export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}

export const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** A short view of a JSON value for error texts. */
export function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}
