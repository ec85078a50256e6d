/** One `<send ...>...</send>` or `<reply ...>...</reply>` element found in an agent's answer. */
export interface Envelope {
  readonly kind: 'send' | 'reply';
  /** The text between the element name and the `>` that closes the opening tag. */
  readonly attrs: string;
  /** Everything between the opening tag and the matching closing tag, as written. */
  readonly inner: string;
}

const KINDS = ['send', 'reply'] as const;
type Kind = (typeof KINDS)[number];

/**
 * Finds the envelopes of an agent's answer, left to right, in time linear in its length.
 *
 * The answer is free text around the elements (prose, code fences, `3 < 5`), so it is not an
 * XML document and no XML parser can take it whole; the payloads inside are parsed by the
 * payload types afterwards. The rules are those of the pattern
 * `<(send|reply)\b([^>]*)>([\s\S]*?)<\/\1\s*>` run globally, which this replaces: that pattern
 * rescans to the end of the text for every opening without a close, so a reply of many
 * `<send` took time quadratic in its length. Here every search for the next `>` or the next
 * closing tag remembers its answer, and later openings reuse it while it still lies ahead, so
 * each character is looked at a bounded number of times.
 */
export function findEnvelopes(text: string): Envelope[] {
  const found: Envelope[] = [];
  const nextGt = memoized((from) => text.indexOf('>', from));
  const nextClose = { send: memoized((from) => closingTag(text, 'send', from)), reply: memoized((from) => closingTag(text, 'reply', from)) };
  let pos = 0;
  for (;;) {
    const lt = text.indexOf('<', pos);
    if (lt < 0) break;
    pos = lt + 1;
    const kind = openingKind(text, lt + 1);
    if (!kind) continue;
    const gt = nextGt(lt + 1 + kind.length);
    if (gt < 0) break; // no `>` anywhere after: no later opening can be complete either
    const close = nextClose[kind](gt + 1);
    if (close < 0) continue; // this opening is never closed; a later one of the other kind may be
    found.push({ kind, attrs: text.slice(lt + 1 + kind.length, gt), inner: text.slice(gt + 1, close) });
    pos = closeEnd(text, kind, close);
  }
  return found;
}

/** `send` or `reply` when an element of that name opens at `at` (just after its `<`). */
function openingKind(text: string, at: number): Kind | null {
  for (const kind of KINDS) {
    if (text.startsWith(kind, at) && !isWordChar(text.charCodeAt(at + kind.length))) return kind;
  }
  return null;
}

/** Index of the first `</kind\s*>` at or after `from`, or -1. */
function closingTag(text: string, kind: Kind, from: number): number {
  const open = `</${kind}`;
  for (let at = text.indexOf(open, from); at >= 0; at = text.indexOf(open, at + 1)) {
    let i = at + open.length;
    while (i < text.length && isSpace(text.charCodeAt(i))) i++;
    if (text.charCodeAt(i) === 0x3e /* > */) return at;
  }
  return -1;
}

/** Index just past the closing tag that starts at `at`. */
function closeEnd(text: string, kind: Kind, at: number): number {
  return text.indexOf('>', at + kind.length + 2) + 1;
}

/**
 * Wraps a forward search (`from` -> first index at or after it, or -1). Callers ask with
 * growing `from`, so an answer still ahead of the new `from` (or a "none") stays right.
 */
function memoized(search: (from: number) => number): (from: number) => number {
  let askedFrom = -1;
  let answer = -1;
  return (from) => {
    if (askedFrom >= 0 && from >= askedFrom && (answer < 0 || answer >= from)) return answer;
    askedFrom = from;
    answer = search(from);
    return answer;
  };
}

function isWordChar(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f;
}

/** The characters `\s` matches in a JavaScript regular expression. */
function isSpace(code: number): boolean {
  return (
    (code >= 0x09 && code <= 0x0d) ||
    code === 0x20 ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}
