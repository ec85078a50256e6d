/**
 * Reads a body up to `limit` bytes. Past it the reading stops (the rest is never buffered) and
 * `complete` is false, with the first `limit` bytes.
 */
export async function readUpTo(body: ReadableStream<Uint8Array> | null, limit: number): Promise<{ bytes: Buffer; complete: boolean }> {
  if (!body) return { bytes: Buffer.alloc(0), complete: true };
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { bytes: Buffer.concat(chunks, size), complete: true };
    const room = limit - size;
    if (value.byteLength > room) {
      chunks.push(Buffer.from(value.buffer, value.byteOffset, room));
      await reader.cancel().catch(() => {});
      return { bytes: Buffer.concat(chunks, limit), complete: false };
    }
    chunks.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
    size += value.byteLength;
  }
}
