import type { Server, Socket } from 'node:net';

/** Messages between `organism serve`'s supervisor and its server process (over the fork IPC channel). */
export type ServerProcessMessage =
  /** server process -> supervisor: send me the listening socket. */
  | { type: 'organism:listen' }
  /** supervisor -> server process: the listening socket (as the message's handle). */
  | { type: 'organism:listener' }
  /** server process -> supervisor: about to read the config (a SIGHUP before this needs no restart). */
  | { type: 'organism:loading' }
  /** supervisor -> server process: noted; read it (later SIGHUPs restart the server process once it serves). */
  | { type: 'organism:load' }
  /** server process -> supervisor: serving; pass me the connections you hold. */
  | { type: 'organism:ready' }
  /** server process -> supervisor: closing; hold new connections for the next server process. */
  | { type: 'organism:closing' }
  /** supervisor -> server process: a connection the supervisor accepted (as the handle). */
  | { type: 'organism:connection'; id: number }
  /** server process -> supervisor: connection `id` arrived, before anything was read from it. */
  | { type: 'organism:taken'; id: number };

/**
 * Serves a connection accepted outside the HTTP server's own listener (the supervisor accepted
 * it and handed it over, or the received listener did) on `server`, as its own accept would:
 * Nagle off (Node's HTTP server sets noDelay on what it accepts, by default; a socket accepted
 * elsewhere has it off, so a response or WebSocket frame written in more than one segment
 * waited for the client's delayed ACK). The supervisor accepts most connections (checked with
 * strace under wrk: 98 of 101).
 */
export function serveAccepted(server: { emit(event: 'connection', socket: Socket): boolean }): (socket: Socket) => void {
  return (socket) => {
    socket.setNoDelay(true);
    server.emit('connection', socket);
  };
}

export const Channel = {
  typeOf(message: unknown): ServerProcessMessage['type'] | null {
    const type = (message as { type?: unknown } | null)?.type;
    return typeof type === 'string' && type.startsWith('organism:') ? (type as ServerProcessMessage['type']) : null;
  },
};

/**
 * The server process's side of the channel. The supervisor's death closes it, which is how the
 * server process learns it is orphaned (Node has no parent-death signal): it then shuts down at
 * once.
 */
export class SupervisorChannel {
  private connectionHandler: ((socket: Socket) => void) | null = null;
  private listenerWaiter: ((server: Server) => void) | null = null;
  private loadWaiter: (() => void) | null = null;

  private constructor() {
    process.on('message', (message: unknown, handle: unknown) => {
      const type = Channel.typeOf(message);
      if (type === 'organism:listener' && handle) this.listenerWaiter?.(handle as Server);
      else if (type === 'organism:connection' && handle) {
        // Said before the socket is read: until then the supervisor keeps its copy, and gives
        // it to the next server process if this one dies with the connection still in the channel.
        this.send({ type: 'organism:taken', id: (message as { id: number }).id });
        this.accept(handle as Socket);
      } else if (type === 'organism:load') this.loadWaiter?.();
    });
  }

  /** The channel when this process is a supervised server process, else null. */
  static connect(): SupervisorChannel | null {
    return process.send && process.connected ? new SupervisorChannel() : null;
  }

  /** The supervisor's listening socket, as a server accepting in this process. */
  listener(): Promise<Server> {
    return new Promise((resolve) => {
      this.listenerWaiter = (server) => {
        this.listenerWaiter = null;
        resolve(server);
      };
      this.send({ type: 'organism:listen' });
    });
  }

  /**
   * About to read the config and load the handlers: resolves once the supervisor knows, so a
   * SIGHUP it handled before is one this read sees the effect of, and one after restarts us.
   */
  loading(): Promise<void> {
    return new Promise((resolve) => {
      this.loadWaiter = () => {
        this.loadWaiter = null;
        resolve();
      };
      this.send({ type: 'organism:loading' });
    });
  }

  /** Serving: connections the supervisor accepted go to `handler` from now on. */
  ready(handler: (socket: Socket) => void): void {
    this.connectionHandler = handler;
    this.send({ type: 'organism:ready' });
  }

  /**
   * About to close: the supervisor holds new connections for the next server process. A connection
   * already on its way is still served (a closing server answers 503 and closes it).
   */
  close(): void {
    this.send({ type: 'organism:closing' });
  }

  onDisconnect(fn: () => void): void {
    process.once('disconnect', fn);
  }

  private accept(socket: Socket): void {
    if (this.connectionHandler) this.connectionHandler(socket);
    else socket.destroy();
  }

  private send(message: ServerProcessMessage): void {
    if (process.connected) process.send!(message);
  }
}
