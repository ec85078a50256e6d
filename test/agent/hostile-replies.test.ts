import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findEnvelopes } from '../../src/agent/envelopes.js';
import { parseAgentReply } from '../../src/agent/reply.js';
import { definePayload } from '../../src/payload/define.js';
import { PayloadRegistry } from '../../src/payload/registry.js';
import { parseXmlElement } from '../../src/payload/xml-tree.js';

const Task = definePayload('Task', { goal: 'string', priority: 'integer?' });
const registry = new PayloadRegistry([Task]);
const peers = [{ name: 'worker', description: 'does tasks', types: [registry.get('Task')!] }];
const read = (text: string, maxMessages = 20) => parseAgentReply(text, { peers, replyTypes: null, registry, maxMessages });

const MB = 1 << 20;
/** `unit` repeated between `prefix` and `suffix` to about 1 MB. */
const megabyte = (unit: string, prefix = '', suffix = '') => prefix + unit.repeat(Math.floor((MB - prefix.length - suffix.length) / unit.length)) + suffix;

/** CPU time (user + system, ms) this process spent in `work`: a resource bound, not a clock. */
function cpuMs(work: () => void): number {
  const start = process.cpuUsage();
  work();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

// Linear parsing takes well under a second per megabyte; the quadratic patterns this replaces
// took minutes to hours on these inputs. The bound is generous for a loaded machine.
const CPU_BOUND_MS = 10_000;

describe('hostile LLM replies are read in time linear in their size', () => {
  const replies: Array<[string, string, boolean?]> = [
    ['100k unclosed <send', '<send'.repeat(100_000)],
    ['unclosed <send to=...> openings', megabyte('<send to="worker">')],
    ['unclosed <reply> openings', megabyte('<reply>')],
    ['an envelope whose payload holds 1 MB of text', megabyte('x', '<send to="worker"><Task><goal>', '</goal></Task></send>'), true],
    ['long text after the payload', megabyte('x', '<send to="worker"><Task><goal>g</goal></Task>', '</send>')],
    ['an unclosed envelope then long text', megabyte('y', '<send to="worker"><Task><goal>g</goal></Task>')],
    ['deep nesting, unclosed', megabyte('<a>', '<send to="worker"><Task>', '</Task></send>')],
    ['deep nesting, closed', `<send to="worker"><Task>${'<a>'.repeat(80_000)}${'</a>'.repeat(80_000)}</Task></send>`],
    ['many attributes on a payload', megabyte(' a="v"', '<send to="worker"><Task', '><goal>g</goal></Task></send>')],
    ['many valueless attributes', megabyte(' b', '<send to="worker"><Task', '><goal>g</goal></Task></send>')],
    ['many attributes on an unclosed <send', megabyte(' to="w"', '<send')],
    ['20,000 complete envelopes', megabyte('<send to="worker"><Task><goal>g</goal></Task></send>')],
    ['nothing but <', megabyte('<')],
    ['nothing but closing tags', megabyte('</send >')],
    ['openings without >', megabyte('<send <reply ')],
    ['unterminated comments and CDATA', megabyte('<!--<![CDATA[', '<send to="worker"><Task><goal>', '</goal></Task></send>')],
  ];

  it.each(replies)('%s', (_, text, valid = false) => {
    expect(text.length).toBeGreaterThan(490_000);
    let result: ReturnType<typeof read> | undefined;
    const used = cpuMs(() => (result = read(text)));
    expect(result!.ok).toBe(valid);
    if (!result!.ok) for (const e of result!.errors) expect(e.length).toBeLessThan(400); // clipped, not the whole reply
    expect(used).toBeLessThan(CPU_BOUND_MS);
  });

  it('a payload element with 1 MB of text, or text after its root, is checked in linear time', () => {
    const long = 'x'.repeat(MB);
    let ok: ReturnType<typeof parseXmlElement> | undefined;
    let trailing: ReturnType<typeof parseXmlElement> | undefined;
    const used = cpuMs(() => {
      ok = parseXmlElement(`<Task><goal>${long}</goal></Task>`);
      trailing = parseXmlElement(`<Task/>${long}`);
    });
    expect(ok?.ok).toBe(true);
    expect(trailing).toEqual({ ok: false, message: `text after the root element: "${'x'.repeat(40)}..."` });
    expect(used).toBeLessThan(CPU_BOUND_MS);
  });

  it('refuses a reply sending more messages than the cap, before reading any payload', () => {
    const five = '<send to="worker"><Task><goal>g</goal></Task></send>'.repeat(5);
    expect(read(five, 5)).toMatchObject({ ok: true });
    expect(read(five, 4)).toEqual({ ok: false, errors: ['the reply sends 5 messages; at most 4 are allowed in one reply'] });
    const bad = '<send to="worker"><Task><nope/></Task></send>'.repeat(5);
    expect(read(bad, 4)).toEqual({ ok: false, errors: ['the reply sends 5 messages; at most 4 are allowed in one reply'] });
    expect(read(`${five}<reply><Task><goal>r</goal></Task></reply>`, 5)).toEqual({ ok: false, errors: ['the reply sends 6 messages; at most 5 are allowed in one reply'] });
  });

  it('lists the first 20 problems of a reply and counts the rest', () => {
    const result = read('<send to="worker"><Task><goal>g</goal><priority>high</priority></Task></send>'.repeat(25), 100);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toHaveLength(21);
    expect(result.errors[0]).toBe('<Task> for worker: priority: expected integer, got "high"');
    expect(result.errors[20]).toBe('... and 5 more problems');
  });
});

describe('findEnvelopes', () => {
  // The global pattern the scanner replaces: it defines which envelopes an answer holds.
  const PATTERN = /<(send|reply)\b([^>]*)>([\s\S]*?)<\/\1\s*>/g;
  const byPattern = (text: string) => [...text.matchAll(PATTERN)].map((m) => ({ kind: m[1], attrs: m[2], inner: m[3] }));

  it('finds exactly what the pattern found, on answers built from the tricky pieces', () => {
    const piece = fc.constantFrom(
      '<send',
      '<reply',
      '<sender',
      '<replying',
      '<send-x',
      ' to="worker"',
      " to='a'",
      '>',
      '<',
      '/',
      '</send>',
      '</reply>',
      '</send \n>',
      '</reply\t>',
      '</send',
      '</reply',
      '</sender>',
      '<Task><goal>g</goal></Task>',
      'x',
      ' ',
      '\n',
      '\u00a0',
      '<done/>',
      '"',
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const text = pieces.join('');
        expect(findEnvelopes(text)).toEqual(byPattern(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('keeps the text around envelopes out and takes the first closing tag of the same kind', () => {
    const text = 'Sure.\n<send to="a"><X/></send> and <reply><Y>1 < 2</Y></reply >. <send to="b"><Z></reply></Z></send>';
    expect(findEnvelopes(text)).toEqual([
      { kind: 'send', attrs: ' to="a"', inner: '<X/>' },
      { kind: 'reply', attrs: '', inner: '<Y>1 < 2</Y>' },
      { kind: 'send', attrs: ' to="b"', inner: '<Z></reply></Z>' },
    ]);
  });
});
