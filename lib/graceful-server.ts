// The HTTP server with the limits of lib/config.ts (request, headers and keep-alive timeouts, a connection
// cap) and a drain that loses no request: on shutdown it stops accepting, every response from then on
// carries `Connection: close` (so a keep-alive client learns before its next request that this socket
// ends), and idle keep-alive sockets are closed once they have stayed idle a moment. Node's own
// server.close() closes idle sockets at once, which resets a request a client is just sending on one. A socket
// on which part of a request has arrived is not idle, though Node hands the request over only once its headers
// are all here: it is answered (or ends with the headers timeout, or the drain's deadline).
import http from 'node:http';
import net from 'node:net';
import type { HttpLimits } from './config';

/** How long a keep-alive socket must have been idle during a drain before it is closed. */
export const IDLE_GRACE_MS = 500;

interface SocketState {
  active: number;
  idleSince: number;
  /**
   * The bytes read from the socket when its last request had been read whole: more since then are a request still
   * arriving (its headers not all here, so Node has not handed it over yet), and the socket is not idle.
   */
  bytesAtIdle: number;
}

export interface GracefulServer {
  server: http.Server;
  /** Requests being answered now. */
  inFlight(): number;
  /** Stops accepting, answers what arrives on open sockets, closes them; force-closes after timeoutMs. */
  drain(timeoutMs: number): Promise<void>;
}

/** Responses to `Expect: 100-continue` whose "100 Continue" has not gone out (nothing has read the body yet). */
const owingContinue = new WeakSet<http.ServerResponse>();

/** Sends "100 Continue" when the body is first read, unless the answer has started (Node reads what is left). */
function continueOnFirstRead(req: http.IncomingMessage, res: http.ServerResponse): void {
  owingContinue.add(res);
  const read = req._read;
  req._read = function (this: http.IncomingMessage, size: number) {
    req._read = read;
    if (owingContinue.delete(res) && !res.headersSent && !res.writableEnded) res.writeContinue();
    return read.call(this, size);
  };
}

/**
 * Before a final answer to a request whose 100 is still owed. A client that waits for the 100 has sent nothing,
 * and Node closes the connection after the answer (the body may still come). One that sends its body without
 * waiting (RFC 9110 allows it) has bytes here already: closing under it would reset the connection, and the client
 * could lose this answer. It gets the 100 first, so Node keeps the connection and reads and drops the rest.
 */
function settleContinue(res: http.ServerResponse): void {
  if (owingContinue.delete(res) && res.req.readableLength > 0) res.writeContinue();
}

export function createGracefulServer(handle: http.RequestListener, limits: HttpLimits): GracefulServer {
  let draining = false;
  const sockets = new Map<net.Socket, SocketState>();

  // Every response's writeHead: once draining, a response still to be sent closes its keep-alive connection.
  // One function for the server (not a closure per request).
  const writeHead = http.ServerResponse.prototype.writeHead;
  const writeHeadClosingWhenDraining = function (
    this: http.ServerResponse,
    ...args: Parameters<typeof writeHead>
  ) {
    if (draining && !this.headersSent) this.setHeader('Connection', 'close');
    settleContinue(this);
    return writeHead.apply(this, args);
  } as typeof writeHead;

  const onRequest: http.RequestListener = (req, res) => {
    const state = sockets.get(req.socket);
    if (state) state.active++;
    res.writeHead = writeHeadClosingWhenDraining;
    res.once('close', () => {
      if (!state) return;
      state.active--;
      state.idleSince = Date.now();
      state.bytesAtIdle = req.socket.bytesRead;
      // Answered before its body was all read: the rest, which Node reads and drops, is not a new request.
      if (!req.complete)
        req.once('end', () => {
          state.bytesAtIdle = req.socket.bytesRead;
          state.idleSince = Date.now();
        });
    });
    void handle(req, res);
  };
  const server = http.createServer(
    {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      // Node checks both timeouts on this interval (30 s by default, longer than the headers timeout)
      connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
      // Node would answer an HTTP/1.1 request without Host with a bare 400 (no error body, no X-Request-Id); the
      // app refuses it in the error shape instead (lib/http/host-header.ts).
      requireHostHeader: false,
    },
    onRequest,
  );
  // An Expect other than 100-continue: Node would answer a bare 417. RFC 9110 lets a server ignore it, and the
  // request is served as any other (the answer in the API's own shapes).
  server.on('checkExpectation', onRequest);
  // `Expect: 100-continue`: the client holds its body back until "100 Continue". Node would send that at once;
  // here it goes out when something starts to read the body, so a request refused before then (no or a bad
  // token, a wrong Content-Type, a declared length over the limit) is answered without the client sending a body
  // it would waste: up to 51 MB of images. Node closes a connection whose final answer went out without the 100.
  server.on('checkContinue', (req, res) => {
    continueOnFirstRead(req, res);
    onRequest(req, res);
  });
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  server.on('connection', (socket: net.Socket) => {
    sockets.set(socket, { active: 0, idleSince: Date.now(), bytesAtIdle: 0 });
    socket.once('close', () => sockets.delete(socket));
  });

  return {
    server,
    inFlight: () => [...sockets.values()].reduce((sum, state) => sum + state.active, 0),
    async drain(timeoutMs) {
      draining = true;
      // net.Server's close stops accepting without http.Server's immediate closing of idle sockets.
      const closed = new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()));
      const deadline = Date.now() + timeoutMs;
      await new Promise<void>((resolve) => {
        const check = () => {
          const now = Date.now();
          for (const [socket, state] of sockets) {
            const idle = state.active === 0 && socket.bytesRead === state.bytesAtIdle;
            if (idle && now - state.idleSince >= IDLE_GRACE_MS) socket.end();
          }
          if (sockets.size === 0 || now >= deadline) {
            clearInterval(timer);
            resolve();
          }
        };
        const timer = setInterval(check, 50);
        check();
      });
      for (const socket of sockets.keys()) socket.destroy();
      await closed;
    },
  };
}
