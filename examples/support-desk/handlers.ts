import { defineHandler } from 'organism';

/**
 * The end of every branch: the answer reaches the customer. Typed from organism.yaml
 * (organism-env.d.ts): `reply` is a Reply, and this listener has no peers to send to.
 */
export const sendToCustomer = defineHandler('customer', (reply, ctx) => {
  ctx.log.info('sent to customer', { customer: reply.customer, text: reply.text, from: ctx.from });
});
