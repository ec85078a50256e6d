import type { Stream } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { Logger } from '../util/logger.js';

/** Longest stderr line logged or kept; longer ones are cut (a server may write anything). */
export const STDERR_LINE_LIMIT = 1_000;
/** Lines kept for the disconnect report. */
export const STDERR_TAIL_LINES = 20;

/**
 * What an MCP stdio server writes to stderr: each line logged (info, with the server's name,
 * cut at STDERR_LINE_LIMIT characters) and the last STDERR_TAIL_LINES kept, so a disconnect
 * can say what the server said last. Kept across reconnections of the same server.
 */
export class StderrTail {
  private readonly kept: string[] = [];
  private partial = '';

  constructor(
    private readonly server: string,
    private readonly logger: Logger,
  ) {}

  /** Reads `stream` (it must be drained: an unread pipe would block a chatty server). */
  follow(stream: Stream): void {
    // One decoder per stream: a character split across chunks is not broken.
    const decoder = new StringDecoder('utf8');
    stream.on('data', (chunk: Buffer | string) => this.write(typeof chunk === 'string' ? chunk : decoder.write(chunk)));
    stream.on('end', () => {
      this.write(decoder.end());
      this.flush();
    });
  }

  /** The last lines, oldest first (with a line not yet ended by a newline). */
  lines(): string[] {
    return this.partial === '' ? [...this.kept] : [...this.kept, this.partial];
  }

  private write(chunk: string): void {
    const parts = (this.partial + chunk).split(/\r?\n/);
    this.partial = parts.pop() ?? '';
    for (const line of parts) this.line(line);
    // A line without end is logged in pieces rather than held without bound.
    while (this.partial.length > STDERR_LINE_LIMIT) {
      this.line(this.partial.slice(0, STDERR_LINE_LIMIT));
      this.partial = this.partial.slice(STDERR_LINE_LIMIT);
    }
  }

  private flush(): void {
    if (this.partial !== '') this.line(this.partial);
    this.partial = '';
  }

  private line(text: string): void {
    if (text.trim() === '') return;
    const cut = text.length > STDERR_LINE_LIMIT ? `${text.slice(0, STDERR_LINE_LIMIT)}...` : text;
    this.kept.push(cut);
    if (this.kept.length > STDERR_TAIL_LINES) this.kept.shift();
    this.logger.info({ mcpServer: this.server, stream: 'stderr' }, cut);
  }
}
