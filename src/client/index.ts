/**
 * `organism/client`: a typed client for the control service, for Node 20+ and browsers.
 * Nothing here imports Node modules at load time (the console bundles it for the browser).
 *
 *   const client = createClient({ baseUrl: 'http://127.0.0.1:8080', token });
 *   const { threads } = await client.threads.list({ status: 'active' });
 *   const live = client.watch();
 *   live.on('message', (f) => console.log(f.message.from, '->', f.message.to));
 */
import { RestClient, type RestOptions } from './rest.js';
import { defaultWebSocketFactory, OrganismSocket, type WatchOptions, type WebSocketFactory } from './socket.js';

export { OrganismApiError, RestClient, type FetchLike, type RestOptions } from './rest.js';
export {
  bearerProtocols,
  OrganismCommandError,
  OrganismSocket,
  WS_SUBPROTOCOL,
  type SocketEvents,
  type WatchOptions,
  type WebSocketAuth,
  type WebSocketFactory,
  type WebSocketLike,
} from './socket.js';
export type * from './types.js';

/** Options of `createClient`: those of the REST client, plus how to open WebSockets. */
export interface ClientOptions extends RestOptions {
  /** How to open WebSockets; default: `ws` in Node, the global WebSocket in browsers. */
  readonly webSocket?: WebSocketFactory;
}

/** The typed client of the control service: REST calls by resource (`client.threads.list()`...) and `watch()` for the live stream. */
export class OrganismClient extends RestClient {
  readonly #wsUrl: string;
  readonly #token: string | undefined;
  readonly #factory: WebSocketFactory | undefined;

  constructor(options: ClientOptions) {
    super(options);
    this.#wsUrl = options.baseUrl.replace(/\/+$/, '').replace(/^http/, 'ws');
    this.#token = options.token;
    this.#factory = options.webSocket;
  }

  /** Opens a live connection (/ws, or /ws/messages with `channel: 'messages'`) that reconnects and resumes. */
  watch(options: WatchOptions = {}): OrganismSocket {
    const factory = this.#factory ? Promise.resolve(this.#factory) : defaultWebSocketFactory();
    return new OrganismSocket(this.#wsUrl, this.#token, factory, options);
  }
}

/** A client for the service at `options.baseUrl`. */
export function createClient(options: ClientOptions): OrganismClient {
  return new OrganismClient(options);
}
