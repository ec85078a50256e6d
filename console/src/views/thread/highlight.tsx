// A small JSON highlighter (no dependency): keys, strings, numbers and literals as spans.
import type { ReactNode } from 'react';

const TOKEN = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;

/** Spans for pretty-printed JSON text (class j-key, j-str, j-num, j-lit). */
export function highlightJson(text: string): ReactNode[] {
  const out: ReactNode[] = [];
  let last = 0;
  for (const m of text.matchAll(TOKEN)) {
    const at = m.index ?? 0;
    if (at > last) out.push(text.slice(last, at));
    const [whole, quoted, colon, literal, number] = m;
    if (quoted !== undefined && colon !== undefined) {
      out.push(
        <span key={at} className="j-key">
          {quoted}
        </span>,
        colon,
      );
    } else if (quoted !== undefined) {
      out.push(
        <span key={at} className="j-str">
          {quoted}
        </span>,
      );
    } else {
      out.push(
        <span key={at} className={literal !== undefined ? 'j-lit' : 'j-num'}>
          {literal ?? number ?? whole}
        </span>,
      );
    }
    last = at + whole.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** A value as pretty JSON; a string holding JSON (tool call arguments) is parsed first. */
export function prettyJson(value: unknown): { text: string; json: boolean } {
  if (typeof value === 'string') {
    try {
      return { text: JSON.stringify(JSON.parse(value), null, 2), json: true };
    } catch {
      return { text: value, json: false };
    }
  }
  return { text: JSON.stringify(value, null, 2) ?? 'null', json: true };
}
