import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { definePayload } from '../../src/payload/define.js';
import { PayloadRegistry } from '../../src/payload/registry.js';
import { escapeXml } from '../../src/payload/xml-text.js';
import { isXmlElement, parseXmlElement } from '../../src/payload/xml-tree.js';
import { order, randomRegistry, registry, trickyString, tree, valueArb } from './fixtures.js';

const base = '<id>7</id><total>1</total><tags/><ship><street>s</street></ship>';
const wrap = (inner: string) => `<Order>${inner}</Order>`;

function errorsOf(xml: string) {
  const r = order.fromXml(xml);
  return r.ok ? [] : r.errors;
}

describe('fromXml: coercion', () => {
  it('coerces text to the field types, keeping string whitespace as written', () => {
    const xml = wrap(
      '<id> -7 </id><total>1.5e3</total><rush>0</rush><tags><item> a </item><item></item></tags><ship><street>Main &amp; 1st &#x263A;</street></ship>' +
        '<items><item><name>n</name><qty>2</qty></item></items><grid><item><item>1</item></item><item/></grid>',
    );
    expect(order.fromXml(xml)).toEqual({
      ok: true,
      value: { id: -7, total: 1500, rush: false, tags: [' a ', ''], ship: { street: 'Main & 1st ☺' }, items: [{ name: 'n', qty: 2 }], grid: [[1], []] },
    });
  });

  it.each([
    ['true', true],
    ['false', false],
    ['1', true],
    ['0', false],
    [' true ', true],
  ])('boolean %j', (text, value) => {
    expect(order.fromXml(wrap(`${base}<rush>${text}</rush>`))).toMatchObject({ ok: true, value: { rush: value } });
  });

  it.each([
    ['id', 'seven', 'expected integer, got "seven"'],
    ['id', '1.0', 'expected integer, got "1.0"'],
    ['id', '', 'expected integer, got ""'],
    ['id', '99999999999999999999', 'expected integer, got integer 100000000000000000000 (outside the safe range -9007199254740991..9007199254740991)'],
    ['total', '0x10', 'expected number, got "0x10"'],
    ['total', 'Infinity', 'expected number, got "Infinity"'],
    ['total', 'NaN', 'expected number, got "NaN"'],
    ['total', '1e999', 'expected number, got "1e999"'],
    ['total', '1_000', 'expected number, got "1_000"'],
    ['total', '', 'expected number, got ""'],
    ['rush', 'yes', 'expected boolean, got "yes"'],
    ['rush', 'TRUE', 'expected boolean, got "TRUE"'],
  ])('%s = %j is refused', (field, text, message) => {
    const others = base.replace(new RegExp(`<${field}>[^<]*</${field}>`), '');
    expect(errorsOf(wrap(`${others}<${field}>${text}</${field}>`))).toEqual([{ path: field, message }]);
  });

  it('an empty element of an optional non-string field means absent; of a string, the empty string', () => {
    expect(order.fromXml(wrap(`${base}<rush/><notes/>`))).toEqual({ ok: true, value: { id: 7, total: 1, tags: [], ship: { street: 's' }, notes: '' } });
  });

  it('-0 reads as 0', () => {
    const r = order.fromXml(wrap(base.replace('<id>7</id>', '<id>-0</id>').replace('<total>1</total>', '<total>-0.0</total>')));
    expect(r.ok && Object.is(r.value['id'], 0) && Object.is(r.value['total'], 0)).toBe(true);
  });

  it('CDATA is taken literally and may sit beside text', () => {
    const r = order.fromXml(wrap(base.replace('<street>s</street>', '<street>a &amp; <![CDATA[<b> &amp; ]]>c</street>')));
    expect(r.ok && r.value['ship']).toEqual({ street: 'a & <b> &amp; c' });
  });

  it('accepts an XML declaration, comments, attributes and surrounding whitespace', () => {
    const r = order.fromXml(`\n  <?xml version="1.0"?>\n<!-- note -->\n<Order kind="x">\n  ${base}\n  <!-- inside -->\n</Order>\n`);
    expect(r).toEqual({ ok: true, value: { id: 7, total: 1, tags: [], ship: { street: 's' } } });
  });
});

describe('fromXml: structural errors, all at once, with paths', () => {
  it('reports every problem in one result', () => {
    const xml = wrap(
      '<id>x</id><id>2</id><colour>red</colour><tags><item>a</item><tag>b</tag></tags><ship>Main St</ship>' + '<items><item><name><b>n</b></name><qty>q</qty></item></items>stray',
    );
    expect(errorsOf(xml)).toEqual([
      { path: 'colour', message: 'unknown element <colour> in <Order> (Order has: id, total, rush, tags, ship, items, grid, notes)' },
      { path: '', message: 'unexpected text "stray" in <Order>; expected child elements of Order' },
      { path: 'id', message: '<id> appears 2 times; expected once' },
      { path: 'total', message: 'required field missing' },
      { path: 'tags[1]', message: 'unexpected <tag> in a list; write each entry as <item>...</item>' },
      { path: 'ship', message: 'unexpected text "Main St" in <ship>; expected child elements of Address' },
      { path: 'ship.street', message: 'required field missing' },
      { path: 'items[0].name', message: 'expected string text, got element <b>' },
      { path: 'items[0].qty', message: 'expected integer, got "q"' },
    ]);
  });

  it('text directly inside a list is refused', () => {
    expect(errorsOf(wrap(base.replace('<tags/>', '<tags>a, b</tags>')))).toEqual([{ path: 'tags', message: 'unexpected text "a, b" in a list; write each entry as <item>...</item>' }]);
  });

  it.each([
    ['<Other/>', 'wrong root element <Other>, expected <Order>'],
    ['<Order/><Order/>', 'expected exactly one root element, found <Order>, <Order>'],
    ['', 'no XML element found'],
    ['  <!-- only a comment -->', 'no XML element found'],
    ['hello <Order/>', "malformed XML at line 1, column 1: char 'h' is not expected."],
    ['<Order/> trailing', 'text after the root element: "trailing"'],
    ['<Order></Order> trailing', 'malformed XML at line 1, column 17: Extra text at the end'],
    ['<Order>\n<id>1</id>\n<total>2</Order>', "malformed XML at line 3, column 9: Expected closing tag 'total' (opened in line 3, col 1) instead of closing tag 'Order'."],
    ['<Order><id>Tom & Jerry</id></Order>', "malformed XML at line 1, column 16: char '&' is not expected."],
    ['<Order><notes>a&nbsp;b</notes></Order>', 'undefined entity &nbsp; (only &amp; &lt; &gt; &quot; &apos; and numeric character references are allowed)'],
    ['<!DOCTYPE Order [<!ENTITY a "aaaa">]><Order><notes>&a;</notes></Order>', 'DOCTYPE and entity declarations are not allowed'],
    ['<!DOCTYPE Order SYSTEM "file:///etc/passwd"><Order/>', 'DOCTYPE and entity declarations are not allowed'],
    ['<Order><constructor>x</constructor></Order>', 'element name <constructor> is reserved and not allowed'],
    ['<Order><__proto__>x</__proto__></Order>', 'element name <__proto__> is reserved and not allowed'],
  ])('%j', (xml, message) => {
    expect(order.fromXml(xml)).toEqual({ ok: false, errors: [{ path: '', message }] });
  });

  it('very deep nesting is refused, not thrown', () => {
    const deep = `<Order>${'<a>'.repeat(500)}${'</a>'.repeat(500)}</Order>`;
    const r = order.fromXml(deep);
    expect(r.ok).toBe(false);
  });

  it('a field named like an Object.prototype member works in XML too', () => {
    const T = new PayloadRegistry([definePayload('T', { toString: 'string', valueOf: 'integer?' })]).get('T')!;
    expect(T.fromXml('<T><toString>x</toString><valueOf>2</valueOf></T>')).toEqual({ ok: true, value: { toString: 'x', valueOf: 2 } });
    expect(T.fromXml('<T/>')).toEqual({ ok: false, errors: [{ path: 'toString', message: 'required field missing' }] });
    const U = new PayloadRegistry([definePayload('U', { toString: 'string?' })]).get('U')!;
    expect(U.toXml({})).toBe('<U>\n</U>');
    expect(U.fromXml(U.toXml({}))).toEqual({ ok: true, value: {} });
  });
});

describe('parseXmlElement + fromElement: validating an element taken out of a larger reply', () => {
  it('parses one element into a tree that fromElement validates', () => {
    const parsed = parseXmlElement('<envelope><Order><id>1</id><total>2</total><tags/><ship><street>s</street></ship></Order></envelope>');
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    const inner = parsed.element.children.find(isXmlElement)!;
    expect(order.fromElement(inner)).toEqual({ ok: true, value: { id: 1, total: 2, tags: [], ship: { street: 's' } } });
    expect(order.fromElement(parsed.element)).toEqual({ ok: false, errors: [{ path: '', message: 'wrong root element <envelope>, expected <Order>' }] });
  });

  it('keeps children in document order with decoded text', () => {
    expect(parseXmlElement('<a>x &lt; <b>1</b><![CDATA[&lt;]]></a>')).toEqual({
      ok: true,
      element: { name: 'a', children: [{ text: 'x < ' }, { name: 'b', children: [{ text: '1' }] }, { text: '&lt;' }] },
    });
  });

  it('refuses text outside the root, before or after', () => {
    expect(parseXmlElement('<!-- c --><a/>')).toMatchObject({ ok: true });
    expect(parseXmlElement('note: <a/>')).toMatchObject({ ok: false });
    expect(parseXmlElement('<a/>\nthanks')).toEqual({ ok: false, message: 'text after the root element: "thanks"' });
  });
});

describe('toXml and the round trip', () => {
  it('escapes the five specials, CR and control characters', () => {
    expect(escapeXml(`a&b<c>d"e'f\rg\u0001h\ti\nj`)).toBe('a&amp;b&lt;c&gt;d&quot;e&apos;f&#xD;g&#x1;h\ti\nj');
    const xml = order.toXml({ id: 1, total: 2, tags: ['<&>'], ship: { street: ']]>' }, notes: '"\'' });
    expect(xml).toContain('<item>&lt;&amp;&gt;</item>');
    expect(xml).toContain('<street>]]&gt;</street>');
    expect(xml).toContain('<notes>&quot;&apos;</notes>');
  });

  it('writes nothing for absent or null optional fields, and an empty element for an empty list', () => {
    expect(order.toXml({ id: 1, total: 2, tags: [], ship: { street: '' }, notes: null })).toBe(
      '<Order>\n  <id>1</id>\n  <total>2</total>\n  <tags></tags>\n  <ship>\n    <street></street>\n  </ship>\n</Order>',
    );
  });

  it.each([
    ['empty strings and lists', { id: 0, total: 0, tags: [], ship: { street: '', zip: '' }, notes: '', items: [], grid: [[], []] }],
    ['whitespace kept at both ends', { id: 1, total: 1, tags: ['  a  ', ' ', '\n\tb\n'], ship: { street: ' x ' } }],
    ['XML specials and look-alikes', { id: 1, total: 1, tags: ['&amp;', '<b/>', ']]>', '<![CDATA[x]]>', '&#x41;', '<!-- c -->'], ship: { street: '"\'' } }],
    ['CR, CRLF and controls', { id: 1, total: 1, tags: ['a\r\nb', '\r', '\u0001\u001f', '\u007f'], ship: { street: 's' } }],
    ['unicode', { id: 1, total: 1, tags: ['é', '日本語', '😀', '\u200b', '\ufeff'], ship: { street: 's' } }],
    [
      'extreme numbers',
      { id: Number.MAX_SAFE_INTEGER, total: 5e-324, tags: [], ship: { street: 's' }, items: [{ name: 'n', qty: -Number.MAX_SAFE_INTEGER, price: 1.7976931348623157e308 }] },
    ],
  ])('%s', (_label, value) => {
    expect(order.validate(value).ok).toBe(true);
    expect(order.fromXml(order.toXml(value))).toEqual({ ok: true, value });
  });

  it('fromXml(toXml(v)) deep-equals v for every valid v of the fixture types (property)', () => {
    const resolve = (n: string) => registry.defs().find((d) => d.name === n);
    for (const type of [order, tree]) {
      fc.assert(
        fc.property(valueArb(type.def, resolve), (v) => {
          expect(type.validate(v)).toEqual({ ok: true, value: v });
          expect(type.fromXml(type.toXml(v))).toEqual({ ok: true, value: v });
        }),
        { numRuns: 200 },
      );
    }
  });

  it('the same holds for random type definitions (property)', () => {
    fc.assert(
      fc.property(
        randomRegistry.chain((defs) => {
          const resolve = (n: string) => defs.find((d) => d.name === n);
          return fc.tuple(fc.constant(defs), valueArb(defs[0]!, resolve));
        }),
        ([defs, v]) => {
          const type = new PayloadRegistry(defs).get('T0')!;
          expect(type.validate(v)).toEqual({ ok: true, value: v });
          expect(type.fromXml(type.toXml(v))).toEqual({ ok: true, value: v });
        },
      ),
      { numRuns: 150 },
    );
  });

  it('strings survive inside every position (property)', () => {
    fc.assert(
      fc.property(trickyString, trickyString, (a, b) => {
        const v = { id: 1, total: 1, tags: [a, b], ship: { street: a, zip: b }, notes: b };
        expect(order.fromXml(order.toXml(v))).toEqual({ ok: true, value: v });
      }),
      { numRuns: 300 },
    );
  });
});
