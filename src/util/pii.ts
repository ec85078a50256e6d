/**
 * Detectors of personal data and credentials in text (`privacy.redact`, the `pii` guard), and
 * the redactors that replace what they find by `[redacted:<name>]`: one for finished text and
 * values, one for text that streams in pieces (LLM deltas), which holds back a tail long enough
 * for a value split between two pieces to be caught whole.
 */

/** The built-in detectors, by name. */
export const DETECTOR_NAMES: readonly DetectorName[] = ['email', 'phone', 'card', 'iban', 'api_key'];
/** A built-in detector's name, as `privacy.redact` and the `pii` guard name it. */
export type DetectorName = 'email' | 'phone' | 'card' | 'iban' | 'api_key';

/** One way of finding values in text. */
export interface Detector {
  readonly name: string;
  /** Global (`g`) pattern of candidates. */
  readonly pattern: RegExp;
  /** A further check of a candidate (e.g. Luhn for card numbers); none: every candidate. */
  readonly check?: (match: string) => boolean;
  /** The longest text a match can span: the streaming redactor holds back this much. */
  readonly maxLength: number;
}

/** A developer's redaction function: the text with what it finds replaced. */
export type RedactFunction = (text: string) => string;

/** Custom patterns of unknown extent are assumed to match at most this many characters (the held-back tail). */
export const CUSTOM_MAX_LENGTH = 128;

function digits(s: string): string {
  return s.replace(/\D/g, '');
}

/** The Luhn checksum of a card number. */
export function luhn(number: string): boolean {
  const d = digits(number);
  let sum = 0;
  for (let i = 0; i < d.length; i++) {
    let n = d.charCodeAt(d.length - 1 - i) - 48;
    if (i % 2 === 1) {
      n *= 2;
      if (n > 9) n -= 9;
    }
    sum += n;
  }
  return d.length > 0 && sum % 10 === 0;
}

/** The ISO 13616 check of an IBAN (mod 97 of the rearranged number is 1). */
export function ibanValid(value: string): boolean {
  const s = value.replace(/\s/g, '').toUpperCase();
  if (s.length < 15 || s.length > 34) return false;
  const rearranged = s.slice(4) + s.slice(0, 4);
  let rest = 0;
  for (const ch of rearranged) {
    const code = ch.charCodeAt(0);
    const part = code >= 65 && code <= 90 ? String(code - 55) : ch;
    for (const c of part) rest = (rest * 10 + (c.charCodeAt(0) - 48)) % 97;
  }
  return rest === 1;
}

const BUILTIN: Readonly<Record<DetectorName, Detector>> = {
  email: {
    name: 'email',
    pattern: /[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,4}\.[A-Za-z]{2,24}/g,
    maxLength: 64 + 1 + 64 * 5 + 25,
  },
  // With a leading + (international) or the separators of a national number (555-123-4567): a
  // bare run of digits (a timestamp, an id) is not taken for a phone number.
  phone: {
    name: 'phone',
    pattern: /(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{1,4}){1,5}|\(?\b\d{3}\)?[ .-]\d{3}[ .-]\d{4}\b)/g,
    check: (m) => {
      const n = digits(m).length;
      return n >= 8 && n <= 15;
    },
    maxLength: 32,
  },
  // 13 to 19 digits (spaces or dashes between groups allowed) starting like a card (2-6), Luhn-checked.
  card: {
    name: 'card',
    pattern: /(?<!\d)[2-6]\d{2,3}(?:[ -]?\d{2,4}){2,5}(?:[ -]?\d{1,4})?(?!\d)/g,
    check: (m) => {
      const n = digits(m).length;
      return n >= 13 && n <= 19 && luhn(m);
    },
    maxLength: 24,
  },
  iban: {
    name: 'iban',
    pattern: /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b/g,
    check: ibanValid,
    maxLength: 42,
  },
  // Provider and platform key formats (OpenAI/Anthropic sk-, Stripe, GitHub, AWS, Google, Slack).
  api_key: {
    name: 'api_key',
    pattern:
      /\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,160}|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,99}|gh[pousr]_[A-Za-z0-9]{36,80}|github_pat_[A-Za-z0-9_]{22,120}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|xox[abprs]-[A-Za-z0-9-]{10,100})/g,
    maxLength: 180,
  },
};

export function builtinDetector(name: DetectorName): Detector {
  return BUILTIN[name];
}

export function isDetectorName(name: string): name is DetectorName {
  return (DETECTOR_NAMES as readonly string[]).includes(name);
}

/** A developer's pattern (a JavaScript regular expression, as text) as a detector named `pattern:<i>`; throws a SyntaxError when invalid. */
export function patternDetector(source: string, name = 'pattern'): Detector {
  return { name, pattern: new RegExp(source, 'gu'), maxLength: CUSTOM_MAX_LENGTH };
}

interface Found {
  readonly start: number;
  readonly end: number;
  readonly name: string;
}

/** What the redactor finds in text, in order, overlaps resolved by the earliest (then longest) match. */
function findAll(detectors: readonly Detector[], text: string): Found[] {
  const all: Found[] = [];
  for (const d of detectors) {
    d.pattern.lastIndex = 0;
    for (const m of text.matchAll(d.pattern)) {
      if (m[0].length === 0) continue;
      if (d.check && !d.check(m[0])) continue;
      all.push({ start: m.index, end: m.index + m[0].length, name: d.name });
    }
  }
  all.sort((a, b) => a.start - b.start || b.end - a.end);
  const kept: Found[] = [];
  for (const f of all) {
    const last = kept[kept.length - 1];
    if (last && f.start < last.end) continue;
    kept.push(f);
  }
  return kept;
}

function replaceFound(text: string, found: readonly Found[], from = 0, to = text.length): string {
  let out = '';
  let at = from;
  for (const f of found) {
    if (f.start < from || f.end > to) continue;
    out += text.slice(at, f.start) + `[redacted:${f.name}]`;
    at = f.end;
  }
  return out + text.slice(at, to);
}

/**
 * `privacy.redact`: replaces what its detectors (and functions) find, in text and in every
 * string of a JSON-like value. `active` is false when it has nothing to look for.
 */
export class Redactor {
  readonly active: boolean;
  /** The tail a streaming redactor holds back: the longest match a detector may make. */
  readonly hold: number;

  constructor(
    readonly detectors: readonly Detector[],
    readonly functions: readonly RedactFunction[] = [],
  ) {
    this.active = detectors.length > 0 || functions.length > 0;
    this.hold = Math.max(0, ...detectors.map((d) => d.maxLength), functions.length > 0 ? CUSTOM_MAX_LENGTH : 0);
  }

  static readonly NONE = new Redactor([]);

  /** What the detectors find in `text` (names, in order): for the `pii` guard. */
  find(text: string): string[] {
    return findAll(this.detectors, text).map((f) => f.name);
  }

  text(text: string): string {
    if (!this.active || text === '') return text;
    return this.applyFunctions(replaceFound(text, findAll(this.detectors, text)));
  }

  /** Every string of a JSON-like value redacted (keys kept), in a copy; the value itself when nothing changed. */
  value<T>(value: T): T {
    if (!this.active) return value;
    return this.walk(value, 0) as T;
  }

  private walk(value: unknown, depth: number): unknown {
    if (typeof value === 'string') return this.text(value);
    if (value === null || typeof value !== 'object' || depth > 64) return value;
    if (Array.isArray(value)) {
      let changed = false;
      const out = value.map((v) => {
        const r = this.walk(v, depth + 1);
        if (r !== v) changed = true;
        return r;
      });
      return changed ? out : value;
    }
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const r = this.walk(v, depth + 1);
      if (r !== v) changed = true;
      out[k] = r;
    }
    return changed ? out : value;
  }

  private applyFunctions(text: string): string {
    let out = text;
    for (const fn of this.functions) {
      try {
        const r = fn(out);
        if (typeof r === 'string') out = r;
      } catch {
        // A redaction function that throws redacts nothing more; the detectors' work is kept.
      }
    }
    return out;
  }

  /** A redactor of one stream of text pieces. */
  stream(emit: (text: string) => void): StreamRedactor {
    return new StreamRedactor(this, emit);
  }

  /** @internal for StreamRedactor */
  split(buffer: string, final: boolean): { out: string; rest: string } {
    const found = findAll(this.detectors, buffer);
    let cut = final ? buffer.length : Math.max(0, buffer.length - this.hold);
    if (!final) {
      // A match reaching into the held tail may still grow: it is held whole.
      for (const f of found) if (f.end > cut && f.start < cut) cut = f.start;
      // Never cut a surrogate pair.
      if (cut > 0 && cut < buffer.length && /[\uD800-\uDBFF]/.test(buffer[cut - 1]!)) cut--;
    }
    if (cut === 0) return { out: '', rest: buffer };
    return { out: this.applyFunctions(replaceFound(buffer, found, 0, cut)), rest: buffer.slice(cut) };
  }
}

/**
 * Redacts a stream of text pieces: each piece is added to a buffer, and only what lies before
 * the held-back tail (the longest match a detector can make, and never the start of a match
 * that reaches into it) is emitted, redacted. `end()` emits the rest. A value split between
 * two pieces is thus seen whole.
 */
export class StreamRedactor {
  private buffer = '';

  constructor(
    private readonly redactor: Redactor,
    private readonly emit: (text: string) => void,
  ) {}

  push(piece: string): void {
    if (!this.redactor.active) {
      if (piece !== '') this.emit(piece);
      return;
    }
    this.buffer += piece;
    if (this.buffer.length <= this.redactor.hold) return;
    const { out, rest } = this.redactor.split(this.buffer, false);
    this.buffer = rest;
    if (out !== '') this.emit(out);
  }

  end(): void {
    if (this.buffer === '') return;
    const { out } = this.redactor.split(this.buffer, true);
    this.buffer = '';
    if (out !== '') this.emit(out);
  }
}
