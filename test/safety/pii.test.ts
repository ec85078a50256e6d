import { describe, expect, it } from 'vitest';
import { builtinDetector, DETECTOR_NAMES, ibanValid, luhn, patternDetector, Redactor } from '../../src/util/pii.js';

/** Issue 30, item 4: the detectors of privacy.redact, and the streaming redactor of live deltas. */

const all = new Redactor(DETECTOR_NAMES.map(builtinDetector));

/** Values that must be caught, by detector. */
const CORPUS = {
  email: ['ada.lovelace@example.com', 'j+tag@mail.example.co.uk'],
  phone: ['+44 20 7946 0958', '+1 (415) 555-0134', '555-867-5309'],
  card: ['4111 1111 1111 1111', '5500-0000-0000-0004', '378282246310005'],
  iban: ['DE89370400440532013000', 'GB82 WEST 1234 5698 7654 32'],
  api_key: ['sk-proj-Abcdefghijklmnop1234567890', 'ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'AKIAIOSFODNN7EXAMPLE'],
} as const;

describe('detectors', () => {
  for (const [name, values] of Object.entries(CORPUS)) {
    for (const value of values) {
      it(`${name} finds ${value}`, () => {
        const text = `before ${value} after`;
        expect(all.text(text)).toBe(`before [redacted:${name}] after`);
      });
    }
  }

  it('card numbers are Luhn-checked; IBANs mod-97 checked', () => {
    expect(luhn('4111111111111111')).toBe(true);
    expect(luhn('4111111111111112')).toBe(false);
    expect(all.text('order 4111 1111 1111 1112 shipped')).toBe('order 4111 1111 1111 1112 shipped');
    expect(ibanValid('DE89370400440532013000')).toBe(true);
    expect(ibanValid('DE89370400440532013001')).toBe(false);
    expect(all.text('ref DE89370400440532013001')).toBe('ref DE89370400440532013001');
  });

  it('leaves ordinary numbers alone: timestamps, ids, dates, amounts', () => {
    const text = '{"time":1733500000000,"pid":4242,"date":"2026-12-06","amount":129.95,"attempt":3,"id":"01JEXAMPLE0000000000000000"}';
    expect(all.text(text)).toBe(text);
  });

  it('redacts every string of a value, keys kept, the value untouched', () => {
    const value = { to: 'ada.lovelace@example.com', n: 3, nested: [{ card: '4111111111111111' }], ok: true };
    expect(all.value(value)).toEqual({ to: '[redacted:email]', n: 3, nested: [{ card: '[redacted:card]' }], ok: true });
    expect(value.to).toBe('ada.lovelace@example.com');
  });

  it("a developer's pattern and function", () => {
    const r = new Redactor([patternDetector('ORD-\\d{6}', 'pattern')], [(t) => t.replace(/Lovelace/g, '[name]')]);
    expect(r.text('ORD-123456 for Ada Lovelace')).toBe('[redacted:pattern] for Ada [name]');
  });
});

describe('the streaming redactor', () => {
  const text = `Contact ada.lovelace@example.com or +44 20 7946 0958; card 4111 1111 1111 1111, IBAN GB82 WEST 1234 5698 7654 32, key sk-proj-Abcdefghijklmnop1234567890. ${'Filler text. '.repeat(40)}End.`;
  const whole = all.text(text);

  for (const size of [1, 2, 3, 5, 7, 16, 64, 1000]) {
    it(`pieces of ${size} characters: every value caught though split, the text otherwise whole`, () => {
      const out: string[] = [];
      const stream = all.stream((t) => out.push(t));
      for (let i = 0; i < text.length; i += size) stream.push(text.slice(i, i + size));
      stream.end();
      expect(out.join('')).toBe(whole);
      for (const values of Object.values(CORPUS)) for (const v of values) for (const piece of out) expect(piece).not.toContain(v);
    });
  }

  it('emits as it goes, holding back no more than the longest match', () => {
    const out: string[] = [];
    const stream = all.stream((t) => out.push(t));
    for (let i = 0; i < 2000; i++) stream.push('word ');
    expect(out.join('').length).toBeGreaterThanOrEqual(2000 * 5 - all.hold);
  });

  it('without detectors, pieces pass at once', () => {
    const out: string[] = [];
    const stream = Redactor.NONE.stream((t) => out.push(t));
    stream.push('a@b.com');
    expect(out).toEqual(['a@b.com']);
  });
});
