import type { Handler, HandlerContext, HandlerResult, Outgoing } from './handler.js';

/**
 * The types of the project's organism.yaml. Empty here: `organism types` writes a declaration
 * file (organism-env.d.ts beside organism.yaml) that fills it in by module augmentation, with
 * `payloads` (each payload type's fields) and `listeners` (each listener's payload types, its
 * peers and the types they accept, and the types its senders accept). Without that file every
 * typed helper falls back to loose types (any listener, any peer, `Record<string, unknown>`).
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by module augmentation (organism-env.d.ts)
export interface OrganismTypes {}

/** What the generated file says of one listener: type names, as strings. */
export interface ListenerTypes {
  /** The payload type(s) it accepts (a union for `payload: [A, B]`). */
  readonly payload: string;
  /** Each declared peer and the payload type(s) it accepts. */
  readonly peers: { readonly [peer: string]: string };
  /** The types accepted by the listeners that name it as a peer (what a reply may be); `never` when none does. */
  readonly replies: string;
}

/** The listeners in effect: those of the generated file, else any name with loose types. */
export type KnownListeners = OrganismTypes extends { readonly listeners: infer L extends { readonly [name: string]: ListenerTypes } } ? L : { readonly [name: string]: ListenerTypes };
/** The payload types in effect: those of the generated file, else any name with `Record<string, unknown>` data. */
export type KnownPayloads = OrganismTypes extends { readonly payloads: infer P extends { readonly [name: string]: object } } ? P : { readonly [name: string]: Record<string, unknown> };

/** The listeners of organism.yaml (any string without the generated file). */
export type ListenerName = keyof KnownListeners & string;
/** The payload types of organism.yaml and of the handler modules (any string without the generated file). */
export type PayloadTypeName = keyof KnownPayloads & string;
/** The data of the payload type named `T` (a union for a union of names); loose for an unknown name. */
export type Payload<T extends string> = T extends keyof KnownPayloads ? KnownPayloads[T] : Record<string, unknown>;
/** The payload type name(s) listener `L` accepts. */
export type AcceptedType<L extends ListenerName> = KnownListeners[L]['payload'] & string;
/** The declared peers of listener `L`. */
export type PeerName<L extends ListenerName> = keyof KnownListeners[L]['peers'] & string;
/** The payload type name(s) peer `P` of listener `L` accepts. */
export type PeerAcceptedType<L extends ListenerName, P extends PeerName<L>> = KnownListeners[L]['peers'][P] & string;
/** What a reply of `L` may carry: the data of a type its senders accept (loose when no listener names it as a peer). */
export type ReplyPayload<L extends ListenerName> = [KnownListeners[L]['replies']] extends [never] ? Record<string, unknown> : Payload<KnownListeners[L]['replies'] & string>;

/** A message to peer `P` of `L`: one variant per payload type the peer accepts. */
export type PeerMessage<L extends ListenerName, P extends PeerName<L>, T extends string = PeerAcceptedType<L, P>> = T extends unknown
  ? { readonly to: P; readonly payload: Payload<T>; readonly payloadType?: T }
  : never;

/** What a typed handler of `L` may send: a message to one of its peers, or a reply to its sender. */
export type TypedOutgoing<L extends ListenerName> =
  | { [P in PeerName<L>]: PeerMessage<L, P> }[PeerName<L>]
  | { readonly to?: undefined; readonly payload: ReplyPayload<L>; readonly payloadType?: string };

/** What a typed handler of `L` returns: nothing, one message, or a list of them. */
export type TypedResult<L extends ListenerName> = void | undefined | null | TypedOutgoing<L> | readonly TypedOutgoing<L>[];

/**
 * The context of a typed handler of `L`: the usual `HandlerContext`, its `payloadType` narrowed
 * to the listener's types, the payload again (`ctx.payload`, narrowed with `ctx.payloadType`),
 * and builders of what it may return: `send` to a declared peer with that peer's type, `reply`
 * with a type its senders accept.
 */
export type TypedContext<L extends ListenerName, T extends string = AcceptedType<L>> = T extends unknown
  ? Omit<HandlerContext, 'payloadType'> & {
      readonly payloadType: T;
      /** The payload handed over (the handler's first argument); `ctx.payloadType` narrows it. */
      readonly payload: Payload<T>;
      /** A message to the declared peer `to`; return it. `payloadType` is needed when the peer accepts several. */
      send<P extends keyof KnownListeners[L]['peers'] & string, K extends PeerAcceptedType<L, P> = PeerAcceptedType<L, P>>(to: P, payload: Payload<K>, payloadType?: K): TypedOutgoing<L>;
      /** A reply to the sender; return it. */
      reply(payload: ReplyPayload<L>, payloadType?: string): TypedOutgoing<L>;
    }
  : never;

/** A handler of listener `L`, typed from the generated declarations. */
export type TypedHandler<L extends ListenerName> = (payload: Payload<AcceptedType<L>>, ctx: TypedContext<L>) => TypedResult<L> | Promise<TypedResult<L>>;

/** One function per payload type `L` accepts (`payload: [A, B]`), each given exactly its type. */
export type TypedHandlerMap<L extends ListenerName> = {
  readonly [T in AcceptedType<L>]: (payload: Payload<T>, ctx: TypedContext<L, T>) => TypedResult<L> | Promise<TypedResult<L>>;
};

const HANDLER_FOR = Symbol.for('organism.handlerFor');

/**
 * Declares the handler of listener `listener` with types from organism.yaml (see `organism
 * types`): its payload, its peers and their payload types, what a reply may be. The result is a
 * plain `Handler`: export it and name it in organism.yaml (`handler: ./billing.ts#billing`).
 *
 *   export const billing = defineHandler('billing', (payload, ctx) => ctx.send('ledger', { amount: payload.total }));
 *
 * For a listener with several payload types, either narrow `ctx.payload` with `ctx.payloadType`,
 * or give one function per type: `defineHandler('desk', { Ticket: (t, ctx) => ..., Approval: (a, ctx) => ... })`.
 * Typing is all it adds: what the handler returns is sent exactly as from an untyped one.
 */
export function defineHandler<L extends ListenerName>(listener: L, handler: TypedHandler<L> | TypedHandlerMap<L>): Handler {
  if (typeof listener !== 'string' || listener === '') throw new TypeError('defineHandler: the first argument must be the listener name');
  if (typeof handler !== 'function' && (typeof handler !== 'object' || handler === null)) {
    throw new TypeError(`defineHandler(${listener}): the second argument must be a function, or an object of one function per payload type`);
  }
  const byType = typeof handler === 'function' ? null : (handler as unknown as Readonly<Record<string, unknown>>);
  const typed: Handler = (payload, ctx) => {
    const fn = byType === null ? handler : byType[ctx.payloadType];
    if (typeof fn !== 'function') throw new TypeError(`defineHandler(${listener}): no function for payload type ${ctx.payloadType}`);
    return (fn as (p: Record<string, unknown>, c: unknown) => HandlerResult | Promise<HandlerResult>)(payload, typedContext(ctx, payload));
  };
  Object.defineProperty(typed, HANDLER_FOR, { value: listener, enumerable: false });
  return typed;
}

/** The listener a `defineHandler` handler was declared for; undefined for any other function. */
export function handlerListener(value: unknown): string | undefined {
  if (typeof value !== 'function') return undefined;
  const name = (value as unknown as Record<symbol, unknown>)[HANDLER_FOR];
  return typeof name === 'string' ? name : undefined;
}

/** The runtime context, seen through (not copied), with the payload and the two builders added. */
function typedContext(ctx: HandlerContext, payload: Record<string, unknown>): HandlerContext {
  const send = (to: string, data: Record<string, unknown>, payloadType?: string): Outgoing => (payloadType === undefined ? { to, payload: data } : { to, payload: data, payloadType });
  const reply = (data: Record<string, unknown>, payloadType?: string): Outgoing => (payloadType === undefined ? { payload: data } : { payload: data, payloadType });
  return Object.create(ctx, {
    payload: { value: payload, enumerable: true },
    send: { value: send, enumerable: false },
    reply: { value: reply, enumerable: false },
  }) as HandlerContext;
}
