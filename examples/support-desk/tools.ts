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
