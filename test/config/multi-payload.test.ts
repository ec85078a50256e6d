import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { sanitizeConfig } from '../../src/config/sanitize.js';
import { listenerFieldChanges } from '../../src/organism/config-changes.js';
import { acceptedTypes } from '../../src/config/accepted-types.js';
import { CONFIG_PATH, problemsOf, y } from './helpers.js';

/** A shout listener whose `payload:` is `list`, beside the YAML type Approval and Announcement (exported by tools.ts). */
const withPayload = (list: string) => y`
  organism: {name: t}
  payloads:
    Approval:
      fields: {ticket: integer, approved: boolean}
  listeners:
    - name: shout
      handler: ./tools.ts#uppercase
      payload: ${list}
`;

const sanitizedPayload = (config: Parameters<typeof sanitizeConfig>[0]) => (sanitizeConfig(config) as { listeners: Array<{ payload: unknown }> }).listeners[0]?.payload;

describe('payload: [A, B] (several payload types per listener)', () => {
  it('loads the list in order; payload is the first type; the sanitized view shows the list', async () => {
    const loaded = await loadOrganismFromString(withPayload('[Announcement, Approval]'), CONFIG_PATH);
    const shout = loaded.config.listeners[0]!;
    expect(shout.payload).toBe('Announcement');
    expect(shout.payloadTypes).toEqual(['Announcement', 'Approval']);
    expect(acceptedTypes(shout)).toEqual(['Announcement', 'Approval']);
    expect(sanitizedPayload(loaded.config)).toEqual(['Announcement', 'Approval']);
  });

  it('a single type is read as before: no payloadTypes, the sanitized view a string', async () => {
    const loaded = await loadOrganismFromString(withPayload('Announcement'), CONFIG_PATH);
    const shout = loaded.config.listeners[0]!;
    expect(shout).not.toHaveProperty('payloadTypes');
    expect(acceptedTypes(shout)).toEqual(['Announcement']);
    expect(sanitizedPayload(loaded.config)).toBe('Announcement');
  });

  it('an unknown type in the list is refused at its item, with the closest type', async () => {
    expect(await problemsOf(withPayload('[Announcement, Aproval]'))).toEqual([
      expect.objectContaining({ keyPath: 'listeners[0].payload[1]', line: 8, message: 'unknown payload type `Aproval`; did you mean `Approval`?' }),
    ]);
  });

  it('a type listed twice is refused at the repeat', async () => {
    expect(await problemsOf(withPayload('[Approval, Announcement, Approval]'))).toEqual([
      expect.objectContaining({ keyPath: 'listeners[0].payload[2]', line: 8, message: 'payload type `Approval` is listed twice; list each type once' }),
    ]);
  });

  it('an empty list and a non-string item are refused', async () => {
    expect(await problemsOf(withPayload('[]'))).toEqual([expect.objectContaining({ keyPath: 'listeners[0].payload', message: expect.stringContaining('at least one payload type') })]);
    expect(await problemsOf(withPayload('[Approval, {x: 1}]'))).toEqual([expect.objectContaining({ keyPath: 'listeners[0].payload[1]' })]);
  });
});

describe('a reload changing payload: names the key once, as organism.yaml spells it', () => {
  it('Announcement -> [Announcement, Approval] is a change of `payload`', async () => {
    const before = await loadOrganismFromString(withPayload('Announcement'), CONFIG_PATH);
    const after = await loadOrganismFromString(withPayload('[Announcement, Approval]'), CONFIG_PATH);
    expect(listenerFieldChanges(before.config.listeners[0]!, after.config.listeners[0]!, false)).toEqual(['payload']);
    expect(listenerFieldChanges(after.config.listeners[0]!, after.config.listeners[0]!, false)).toEqual([]);
  });
});
