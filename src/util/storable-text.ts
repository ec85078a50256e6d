/**
 * Text every store keeps as given. PostgreSQL refuses a NUL (U+0000) in text and jsonb, and a
 * lone UTF-16 surrogate has no UTF-8 form (SQLite would keep a replacement character instead):
 * such text is refused where it enters, the same way on both stores, rather than accepted and
 * then lost or left unwritable. Everything else (RTL marks, emoji, any printable Unicode) is
 * stored and read back unchanged.
 */

/** A lone high surrogate (no low one after it) or a lone low surrogate (no high one before it). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** C0 and C1 control characters and DEL: never part of an identifier. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this finds
const CONTROL = /[\u0000-\u001F\u007F-\u009F]/;

const hex = (c: string): string => `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;

/** Why no store can keep `text` as given, or null when every store can. */
export function unstorableReason(text: string): string | null {
  const nul = text.indexOf('\u0000');
  if (nul >= 0) return `contains a NUL character (U+0000) at position ${nul}, which the stores cannot keep`;
  const lone = LONE_SURROGATE.exec(text);
  if (lone) return `contains a lone UTF-16 surrogate (${hex(lone[0])}) at position ${lone.index}, which is not valid Unicode text`;
  return null;
}

const UNSTORABLE = new RegExp(`\u0000|${LONE_SURROGATE.source}`, 'g');

/**
 * `text` with what no store keeps replaced by U+FFFD: for diagnostics the service writes itself
 * (an error a handler threw), which must always be writable; user data is refused instead.
 */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE, '\uFFFD');
}

/**
 * Why `text` is no valid identifier (a thread id, a message id, a listener name), or null.
 * `search`: the value is text to search for (`?text=`), and the reason says so.
 */
export function identifierReason(text: string, search = false): string | null {
  const control = CONTROL.exec(text);
  if (control) return `contains the control character ${hex(control[0])} at position ${control.index}; ${search ? 'search text must be printable' : 'identifiers are printable text'}`;
  return unstorableReason(text);
}

export interface TextProblem {
  /** Where in the value: `payload.Question.text`, `metadata.orgId`, `payload.items[2]`. */
  readonly field: string;
  readonly message: string;
}

/** `a.b`, `a[3]`, or `a["odd key"]` when the key is not a plain name. */
function child(at: string, key: string | number): string {
  if (typeof key === 'number') return `${at}[${key}]`;
  return /^[A-Za-z_$][\w$-]*$/.test(key) ? `${at}.${key}` : `${at}[${JSON.stringify(key)}]`;
}

/**
 * The first string (key or value) in a JSON value that no store can keep, named by its path
 * from `root`; null when all can be. Walked without recursion: a deeply nested value cannot
 * overflow the stack.
 */
export function unstorableText(value: unknown, root: string): TextProblem | null {
  const stack: Array<[unknown, string]> = [[value, root]];
  while (stack.length > 0) {
    const [v, at] = stack.pop()!;
    if (typeof v === 'string') {
      const reason = unstorableReason(v);
      if (reason) return { field: at, message: reason };
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], child(at, i)]);
      continue;
    }
    const entries = Object.entries(v as Record<string, unknown>);
    for (const [key] of entries) {
      const reason = unstorableReason(key);
      if (reason) return { field: child(at, key), message: `has a key that ${reason}` };
    }
    for (let i = entries.length - 1; i >= 0; i--) stack.push([entries[i]![1], child(at, entries[i]![0])]);
  }
  return null;
}
