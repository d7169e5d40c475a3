// Requests Node's HTTP layer refuses before any middleware runs (a malformed request line or header, headers
// over the size limit, a request slower than HTTP_HEADERS_TIMEOUT_MS / HTTP_REQUEST_TIMEOUT_MS): answered in
// API.md's error body with an X-Request-Id, as every other response is, instead of Node's bare status line.
// The connection then closes, as Node's own answer closes it: the parser cannot go on after such a request. It
// is destroyed once the answer is written, not only ended: a client that keeps its side open (half-open), or
// keeps sending a body it was too slow with, must not hold the connection (HTTP_MAX_CONNECTIONS) or finish a
// request it was told timed out.
import crypto from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { AppError } from '../errors';
import type { Logger } from '../logger';
import { errorBody } from './error-body';

/** How long an answer that is not taken may keep its socket. */
const CLOSE_AFTER_MS = 1_000;

function errorFor(code: string | undefined): AppError {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new AppError(431, 'REQUEST_HEADERS_TOO_LARGE', 'Request headers are too large');
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new AppError(408, 'REQUEST_TIMEOUT', 'The request did not arrive in time');
  }
  return new AppError(400, 'VALIDATION_ERROR', 'Malformed HTTP request');
}

/**
 * The request's path: the request already handed to the app (a body too slow to arrive), or the request line the
 * refused bytes show; else "".
 */
function pathOf(rawPacket: unknown, request: http.IncomingMessage | undefined): string {
  const source =
    request?.url ??
    (Buffer.isBuffer(rawPacket) ? rawPacket.toString('latin1', 0, Math.min(rawPacket.length, 8192)) : '');
  const line = request?.url ? /^(\/[^\s?#]*)/.exec(source) : /^[A-Z]+ (\/[^\s?#]*)/.exec(source);
  return line ? line[1] : '';
}

/** The requests the app had begun that were answered here, with the status sent (the access log reports it). */
const answered = new WeakMap<http.IncomingMessage, number>();

/** The status this listener sent for a request the app had begun, if it answered one. */
export function answeredBeforeApp(request: http.IncomingMessage): number | undefined {
  return answered.get(request);
}

/** The server's `clientError` listener. */
export function answerClientErrors(logger: Logger) {
  const log = logger.child({ component: 'HttpServer' });
  return (err: Error & { code?: string; rawPacket?: unknown }, socket: net.Socket): void => {
    // As Node itself: nothing more can be sent on a socket that is gone or already carries a response.
    const response = (socket as { _httpMessage?: http.ServerResponse })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || response?.headersSent) {
      socket.destroy();
      return;
    }
    const error = errorFor(err.code);
    // A request the app had begun (a body too slow to arrive) keeps the id the app gave it, which its access-log line
    // carries too.
    const assigned = response?.getHeader('X-Request-Id');
    const requestId = typeof assigned === 'string' ? assigned : crypto.randomUUID();
    const path = pathOf(err.rawPacket, response?.req);
    if (response) answered.set(response.req, error.status);
    const json = JSON.stringify(errorBody(error, { path, requestId }));
    socket.end(
      `HTTP/1.1 ${error.status} ${http.STATUS_CODES[error.status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(json)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        'X-Content-Type-Options: nosniff\r\n' +
        'Connection: close\r\n\r\n' +
        json,
      () => socket.destroy(),
    );
    // A client that does not read even this answer: the socket goes anyway.
    setTimeout(() => socket.destroy(), CLOSE_AFTER_MS).unref();
    log.info(
      { requestId },
      `${error.status} ${error.code} before routing${path ? ` (${path})` : ''}: ${err.code ?? err.message}`,
    );
  };
}
