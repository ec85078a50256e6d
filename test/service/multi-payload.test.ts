import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startService, type Service } from './fixture.js';

/** desk accepts `payload: [Ticket, Approval]`; echo keeps one type (its views must stay as they were). */
const YAML = `organism: {name: desk}
payloads:
  Ticket: {description: A customer ticket, fields: {text: string}}
  Approval: {fields: {ticket: string, approved: boolean}}
listeners:
  - name: desk
    description: takes tickets and approvals
    handler: ./desk.ts#take
    payload: [Ticket, Approval]
  - name: echo
    handler: ./desk.ts#take
    payload: Ticket
`;
const DESK = 'export const take = () => undefined;\n';

const services: Service[] = [];
afterEach(async () => {
  while (services.length) await services.pop()!.close();
});

async function start(): Promise<Service> {
  const s = await startService({ yaml: YAML, files: { 'desk.ts': DESK } });
  services.push(s);
  return s;
}

describe('a listener of several payload types through the API', () => {
  it('inject takes each type by name; the bare-fields form is refused (422) naming the types it accepts', async () => {
    const s = await start();
    const types: string[] = [];
    for (const payload of [{ Ticket: { text: 'help' } }, { Approval: { ticket: 'T-1', approved: true } }]) {
      const res = await s.request('POST', '/api/v1/inject', { body: { to: 'desk', payload } });
      expect(res.status).toBe(200);
      const threadId = res.body.threadId as string;
      await eventually(async () => (await s.request('GET', `/api/v1/threads/${threadId}`)).body.status === 'completed', 'the thread to complete');
      const messages = (await s.request('GET', `/api/v1/threads/${threadId}/messages`)).body.messages as Array<{ payloadType: string; payload: unknown }>;
      types.push(messages[0]!.payloadType);
      expect(messages[0]!.payload).toEqual(Object.values(payload)[0]);
    }
    expect(types).toEqual(['Ticket', 'Approval']);

    const bare = await s.request('POST', '/api/v1/inject', { body: { to: 'desk', payload: { text: 'help' } } });
    expect(bare.status).toBe(422);
    expect(bare.body.code).toBe('PAYLOAD_TYPE_REQUIRED');
    expect(bare.body.detail).toBe('Listener desk accepts several payload types (Ticket or Approval): name the type, e.g. {"Ticket": {...}}');
    const invalid = await s.request('POST', '/api/v1/inject', { body: { to: 'desk', payload: { Approval: { ticket: 'T-1' } } } });
    expect(invalid.status).toBe(422);
    expect(invalid.body.detail).toBe('Invalid Approval payload: approved: required field missing');
    // One type: the bare form works as before.
    expect((await s.request('POST', '/api/v1/inject', { body: { to: 'echo', payload: { text: 'bare' } } })).status).toBe(200);
  });

  it('agents, capabilities and the schema show each type; a single-type listener’s views are unchanged', async () => {
    const s = await start();
    const desk = (await s.request('GET', '/api/v1/agents/desk')).body;
    expect(desk).toMatchObject({ payloadClass: 'Ticket', payloadClasses: ['Ticket', 'Approval'] });
    expect((await s.request('GET', '/api/v1/agents/desk/config')).body).toMatchObject({ payloadClass: 'Ticket', payloadClasses: ['Ticket', 'Approval'] });
    const echo = (await s.request('GET', '/api/v1/agents/echo')).body;
    expect(echo.payloadClass).toBe('Ticket');
    expect(echo).not.toHaveProperty('payloadClasses');

    const list = (await s.request('GET', '/api/v1/capabilities')).body.capabilities as Array<Record<string, unknown>>;
    expect(list.find((c) => c['name'] === 'desk')).toMatchObject({ rootTag: 'Ticket', rootTags: ['Ticket', 'Approval'] });
    expect(list.find((c) => c['name'] === 'echo')).not.toHaveProperty('rootTags');

    const cap = (await s.request('GET', '/api/v1/capabilities/desk')).body;
    expect(cap.payloadTypes.map((t: { name: string }) => t.name)).toEqual(['Ticket', 'Approval']);
    expect(cap.payloadTypes[1]).toMatchObject({
      name: 'Approval',
      jsonSchema: { title: 'Approval', required: ['ticket', 'approved'] },
      example: { ticket: expect.any(String), approved: expect.any(Boolean) },
    });
    expect(cap.payloadTypes[1].schemaXsd).toContain('<xs:element name="Approval" type="ApprovalType"/>');
    expect(cap.toolCall).toEqual({ name: 'send_to_desk', arguments: { Ticket: { text: expect.any(String) } } });
    expect((await s.request('GET', '/api/v1/capabilities/echo')).body).not.toHaveProperty('payloadTypes');

    const xsd = (await s.request('GET', '/api/v1/agents/desk/schema')).body.schema as string;
    expect(xsd).toContain('<xs:element name="Ticket" type="TicketType"/>');
    expect(xsd).toContain('<xs:element name="Approval" type="ApprovalType"/>');
    expect(xsd.match(/<xs:complexType name="TicketType">/g)).toHaveLength(1);

    const config = (await s.request('GET', '/api/v1/organism/config')).body as { listeners: Array<{ name: string; payload: unknown }> };
    expect(config.listeners.map((l) => l.payload)).toEqual([['Ticket', 'Approval'], 'Ticket']);

    const openapi = (await s.request('GET', '/api/v1/openapi.json')).body;
    expect(JSON.stringify(openapi)).toContain('payloadClasses');
  });
});
