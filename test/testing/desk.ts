import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A small support desk for the test kit's tests: a triage agent (LLM) routes tickets to billing
 * or tech (LLM agents), which send an answer to the outbox (code); billing may look orders up
 * (a code tool, in the tools reply format: the XML format offers no tools).
 * The mock provider's script routes by the ticket's category (`when:`), so it runs offline.
 */
export const DESK_HANDLERS = `
import { defineTool, definePayload, type Handler } from 'organism';

export const outbox: Handler = (payload, ctx) => {
  ctx.log.info('answered', { text: String(payload['text']), from: ctx.from });
};

export const lookupOrder = defineTool({
  description: 'Looks an order up by its id',
  input: definePayload('OrderQuery', { orderId: 'string' }),
  run: async ({ orderId }: { orderId: string }) => ({ orderId, status: orderId === '7' ? 'shipped' : 'unknown' }),
});
`;

export const DESK_YAML = (replyFormat: 'tools' | 'xml' = 'tools') => `
organism:
  name: desk

llm:
  providers:
    - name: mock
      type: mock
      reply_format: ${replyFormat}
      latency_ms: {min: 200, max: 400, seed: 1}
      script:
        triage:
          - when: {category: billing}
            steps: ['<send to="billing"><Ticket><category>{{category}}</category><text>{{text}}</text></Ticket></send>']
          - when: {text: /refund|invoice/i}
            steps: ['<send to="billing"><Ticket><category>{{category}}</category><text>{{text}}</text></Ticket></send>']
          - steps: ['<send to="tech"><Ticket><category>{{category}}</category><text>{{text}}</text></Ticket></send>']
        billing: '<send to="outbox"><Answer><text>Billing will look at: {{text}}</text></Answer></send>'
        tech: '<send to="outbox"><Answer><text>Tech will look at: {{text}}</text></Answer></send>'
  pricing:
    mock-: {prompt: 1, completion: 2}

payloads:
  Ticket:
    fields:
      category: string
      text: string
      priority: {type: integer, optional: true}
  Answer:
    fields:
      text: string

listeners:
  - name: triage
    description: Routes tickets
    prompt: Route each ticket to billing or tech.
    handler: builtin:llm
    model: mock-1
    payload: Ticket
    peers: [billing, tech]
  - name: billing
    description: Billing questions
    prompt: Answer billing questions.
    handler: builtin:llm
    model: mock-1
    payload: Ticket
    peers: [outbox]
${replyFormat === 'tools' ? '    tools: [./desk.ts#lookupOrder]\n' : ''}  - name: tech
    description: Technical problems
    prompt: Answer technical questions.
    handler: builtin:llm
    model: mock-1
    payload: Ticket
    peers: [outbox]
  - name: outbox
    description: Sends answers to customers
    handler: ./desk.ts#outbox
    payload: Answer
`;

/** A directory holding desk.ts (and organism.yaml), removed by the returned function. */
export function deskDir(replyFormat: 'tools' | 'xml' = 'tools'): { dir: string; config: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-desk-'));
  writeFileSync(path.join(dir, 'desk.ts'), DESK_HANDLERS);
  writeFileSync(path.join(dir, 'organism.yaml'), DESK_YAML(replyFormat));
  return { dir, config: path.join(dir, 'organism.yaml'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
