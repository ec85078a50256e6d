import { fork, type ChildProcess } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { ExitCode } from './exit-codes.js';
import { Channel, type ServerProcessMessage } from './server-channel.js';

/**
 * Exit codes that mean "the server process cannot start": restarting would fail the same way.
 * STORAGE also ends a server process whose data directory was deleted under it (after its
 * rescue copy): the supervisor exits 4 too, so the service manager sees the failure (and
 * restarts on a fresh directory by its own policy) rather than a supervisor quietly starting an
 * empty organism.
 */
const FATAL_CODES = new Set<number>([ExitCode.USAGE, ExitCode.CONFIG_INVALID, ExitCode.STORAGE, ExitCode.LISTEN]);
const CRASH_WINDOW_MS = 60_000;
const MAX_CRASHES = 5;

/** Set (to '1') in the server process's environment; the variable keeps its first name. */
export const SERVER_PROCESS_ENV = 'ORGANISM_SERVE_WORKER';

export interface ListenAddress {
  readonly port: number;
  readonly host: string;
}

/**
 * `organism serve` runs as a small supervisor that keeps the PID the operator started (so
 * systemd and friends keep tracking it) and runs the server in a child process, the server
 * process. Node 20 has no exec-style self-replacement (process.execve arrived in later Node
 * versions), so a graceful restart is: the server process drains and exits with RESTART, the
 * supervisor starts a new server process. SIGHUP to the supervisor asks the server process for
 * that restart; SIGTERM/SIGINT ask it to shut down. A crashing server process is restarted with
 * backoff.
 *
 * The supervisor owns the listening socket, so it outlives every server process and a restart
 * never refuses a connection: each server process is handed the socket and accepts on it
 * itself. A Node process holding a listening server also accepts on it, so the supervisor
 * passes the connections it accepts to the ready server process, and holds them (paused,
 * unread) while no server process is ready: between an old server process closing and a new one
 * listening, clients wait, never refused.
 */
export function supervise(script: string, args: readonly string[], address: ListenAddress): Promise<number> {
  return new Promise((resolve) => {
    let serverProcess: ChildProcess | null = null;
    let ready = false;
    /** The server process said it is closing: the next one reads the config afresh. */
    let closing = false;
    /** The server process has begun reading the config (it said so). */
    let loading = false;
    /** A SIGHUP came while the server process was loading: it restarts once it serves. */
    let hupPending = false;
    let stopping = false;
    const crashes: number[] = [];
    const held: Socket[] = [];
    /** Connections sent to a server process that it has not yet said it took, by hand-over id. */
    const passing = new Map<number, { socket: Socket; owner: ChildProcess }>();
    let lastId = 0;

    const server: Server = createServer({ pauseOnConnect: true });
    server.on('connection', (socket) => {
      socket.on('error', () => undefined); // a client that resets while held is simply gone
      pass(socket);
    });

    let retry: NodeJS.Timeout | null = null;
    const hold = (socket: Socket) => {
      if (socket.destroyed || held.includes(socket)) return;
      held.push(socket);
      socket.once('close', () => {
        const i = held.indexOf(socket);
        if (i >= 0) held.splice(i, 1);
      });
      // Held while a server process is ready (a hand-over failed as server processes changed): try again shortly,
      // or the client would wait, unanswered, until the next restart's flush.
      if (ready && !retry) {
        retry = setTimeout(() => {
          retry = null;
          flush();
        }, 20);
      }
    };
    const pass = (socket: Socket) => {
      const current = serverProcess;
      if (!current || !ready || !current.connected) return hold(socket);
      const id = ++lastId;
      passing.set(id, { socket, owner: current });
      // keepOpen: the supervisor closes its copy only when the server process says it took the
      // connection (organism:taken). Node's own hand-over never closes the parent's copy when
      // the server process dies first (the client then waits with nobody to answer), and closing it as
      // soon as the message is written loses a connection still in the channel when the server process
      // exits (the kernel drops it: the client gets ECONNRESET, seen during graceful restarts).
      current.send({ type: 'organism:connection', id } satisfies ServerProcessMessage, socket, { keepOpen: true }, (err) => {
        if (!err) return;
        passing.delete(id);
        hold(socket);
      });
    };
    const taken = (id: number) => {
      const handed = passing.get(id);
      if (!handed) return;
      passing.delete(id);
      handed.socket.destroy();
    };
    /**
     * Connections a dead server process never took (still in the channel, or queued by Node behind a
     * handle awaiting its ACK, which Node drops without a callback) go to the next server process:
     * nothing was read from them.
     */
    const reclaim = (child: ChildProcess) => {
      for (const [id, handed] of passing) {
        if (handed.owner !== child) continue;
        passing.delete(id);
        hold(handed.socket);
      }
    };
    const flush = () => {
      for (const socket of held.splice(0)) pass(socket);
    };

    const start = () => {
      ready = false;
      closing = false;
      loading = false;
      const child = fork(script, [...args], {
        env: { ...process.env, [SERVER_PROCESS_ENV]: '1' },
        stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
      });
      serverProcess = child;
      child.on('message', (message: unknown) => {
        const type = Channel.typeOf(message);
        if (type === 'organism:taken') taken((message as { id: number }).id);
        else if (type === 'organism:listen') child.send({ type: 'organism:listener' } satisfies ServerProcessMessage, server);
        else if (type === 'organism:loading') {
          loading = true;
          child.send({ type: 'organism:load' } satisfies ServerProcessMessage);
        } else if (type === 'organism:ready') {
          ready = true;
          flush();
          if (hupPending) {
            hupPending = false;
            child.kill('SIGHUP');
          }
        } else if (type === 'organism:closing') {
          ready = false;
          closing = true;
        }
      });
      child.on('exit', (code, signal) => {
        if (serverProcess === child) {
          serverProcess = null;
          ready = false;
        }
        reclaim(child);
        const exitCode = code ?? (signal ? 128 + (signalNumber(signal) ?? 0) : ExitCode.FAILURE);
        if (stopping) return finish(exitCode === ExitCode.RESTART ? ExitCode.OK : exitCode);
        if (exitCode === ExitCode.RESTART) return start();
        if (exitCode === ExitCode.OK) return finish(ExitCode.OK);
        if (FATAL_CODES.has(exitCode)) return finish(exitCode);
        const now = Date.now();
        crashes.push(now);
        while (crashes.length > 0 && crashes[0]! < now - CRASH_WINDOW_MS) crashes.shift();
        if (crashes.length >= MAX_CRASHES) {
          process.stderr.write(`organism: the server process crashed ${crashes.length} times within a minute; giving up\n`);
          return finish(ExitCode.FAILURE);
        }
        const delay = Math.min(250 * 2 ** (crashes.length - 1), 5_000);
        // The text keeps its first word: test/cli/lifecycle.test.ts looks for 'worker exited'.
        process.stderr.write(`organism: worker exited (${signal ?? code}); restarting in ${delay} ms\n`);
        setTimeout(start, delay);
      });
    };

    const finish = (code: number) => {
      process.off('SIGHUP', onHup);
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onTerm);
      if (retry) clearTimeout(retry);
      for (const socket of held.splice(0)) socket.destroy();
      // Not server.close's callback: for connections handed to a server process, Node waits for that
      // server process to report them closed, and an exited server process never does (the supervisor then
      // ended with exit code 13, an unsettled top-level await, instead of `code`).
      server.close();
      resolve(code);
    };
    // A server process handles SIGHUP once it serves; one still booting would die of it (a crash, and
    // a SIGHUP storm of five made the supervisor give up). A SIGHUP asks for the config and
    // handlers to be read afresh: one that comes before a server process reads them (while it closes,
    // or while the next one loads its own code) is answered by that boot; one that comes while
    // it reads them restarts it once it serves.
    const onHup = () => {
      if (!serverProcess || stopping || closing) return;
      if (ready) serverProcess.kill('SIGHUP');
      else if (loading) hupPending = true;
    };
    const onTerm = () => {
      stopping = true;
      if (serverProcess) serverProcess.kill('SIGTERM');
      else finish(ExitCode.OK);
    };

    server.once('error', (err) => {
      process.stderr.write(`organism: cannot listen on ${address.host}:${address.port}: ${err.message}\n`);
      resolve(ExitCode.LISTEN);
    });
    server.listen({ port: address.port, host: address.host }, () => {
      process.on('SIGHUP', onHup);
      process.on('SIGTERM', onTerm);
      process.on('SIGINT', onTerm);
      start();
    });
  });
}

function signalNumber(signal: NodeJS.Signals): number | undefined {
  const map: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  return map[signal];
}
