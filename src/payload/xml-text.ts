/** XML text escaping. Characters XML 1.0 cannot carry literally are written as char refs. */
export function escapeXml(s: string): string {
  let out = '';
  for (const ch of s) {
    switch (ch) {
      case '&':
        out += '&amp;';
        break;
      case '<':
        out += '&lt;';
        break;
      case '>':
        out += '&gt;';
        break;
      case '"':
        out += '&quot;';
        break;
      case "'":
        out += '&apos;';
        break;
      case '\r':
        out += '&#xD;'; // a literal CR would be normalized away by any XML parser
        break;
      default: {
        const code = ch.codePointAt(0)!;
        out += (code < 0x20 && code !== 0x9 && code !== 0xa) || code === 0xfffe || code === 0xffff ? `&#x${code.toString(16).toUpperCase()};` : ch;
      }
    }
  }
  return out;
}

const ENTITY = /&(?:(amp|lt|gt|quot|apos)|#(\d+)|#x([0-9a-fA-F]+));/g;
const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Decodes the five standard entities and numeric character references (nothing else). */
export function unescapeXml(s: string): string {
  return s.replace(ENTITY, (m, name?: string, dec?: string, hex?: string) => {
    if (name) return NAMED[name]!;
    const code = dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex!, 16);
    return code <= 0x10ffff ? String.fromCodePoint(code) : m;
  });
}
