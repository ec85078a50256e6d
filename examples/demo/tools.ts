import type { Handler } from 'organism';

/** A code tool: announces the text in upper case. It has no peers, so its branch ends here. */
export const uppercase: Handler = (payload, ctx) => {
  const text = String(payload['text'] ?? '').toUpperCase();
  ctx.log.info('announcement', { text });
};
