import { definePayload, defineTool } from 'organism';

/** The shop's orders (a real desk would ask its order service, passing `signal` on). */
const ORDERS: Readonly<Record<string, { status: string; carrier: string }>> = {
  '1042': { status: 'shipped', carrier: 'DHL' },
  '1043': { status: 'waiting for stock', carrier: 'none yet' },
};

/** A code tool of tech: runs inside its LLM turn, its result goes back to the model. */
export const lookupOrder = defineTool({
  description: 'Looks an order up by its id: its status and carrier',
  input: definePayload('OrderQuery', { orderId: 'string' }),
  timeoutSeconds: 5,
  run: async ({ orderId }: { orderId: string }) => {
    const order = ORDERS[orderId];
    return order ? `order ${orderId} is ${order.status} (carrier: ${order.carrier}).` : `order ${orderId} was not found.`;
  },
});

/**
 * A code tool with a side effect: tech's model proposes it, and organism.yaml lists it under
 * tech's `approval:`, so it runs only once a person approved it (as proposed or edited) in the
 * inbox. A crash between the tool and the delivery's ack can run it again: a real desk would
 * key the shipment by `messageId` (docs/api.md, "The inbox").
 */
export const replaceDevice = defineTool({
  description: "Ships a replacement device for an order to the customer (needs a person's approval)",
  input: definePayload('Replacement', { customer: 'string', orderId: 'string' }),
  timeoutSeconds: 5,
  run: async ({ customer, orderId }: { customer: string; orderId: string }, ctx) => {
    ctx.log.info('replacement shipped', { customer, orderId, messageId: ctx.messageId });
    return `a replacement for order ${orderId} ships to ${customer} tomorrow.`;
  },
});
