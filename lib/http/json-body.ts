// The JSON request body. koa-body (co-body) reads it, undoes its Content-Encoding, bounds it (1 MB) and parses it,
// decoding the bytes as UTF-8 leniently: an invalid byte becomes U+FFFD, so different bytes (two passwords, say)
// would read as one text and be stored as what nobody sent. The bytes are therefore kept as they arrive and checked
// once the body is parsed: a body that is not UTF-8 is 400. A charset other than UTF-8 is 415 (co-body would
// read it as UTF-8 all the same).
import { isUtf8 } from 'node:buffer';
import zlib from 'node:zlib';
import type Koa from 'koa';
import { koaBody } from 'koa-body';
import { AppError, ValidationError } from '../errors';

const JSON_BODY_LIMIT = '1mb';

/** The methods koa-body parses (its default); on any other it only runs its content-type checks for nothing. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** The types koa-body parses as JSON (its default list): only their bodies are read here. */
const JSON_TYPES = [
  'application/json',
  'application/json-patch+json',
  'application/vnd.api+json',
  'application/csp-report',
  'application/reports+json',
];
const UTF8 = /^utf-?8$/i;

/** The body's bytes with its Content-Encoding undone, as koa-body's inflation undid it (gzip, deflate, br). */
function contentOf(raw: Buffer, encoding: string): Buffer {
  switch (encoding.trim().toLowerCase()) {
    case 'gzip':
    case 'deflate':
      return zlib.unzipSync(raw);
    case 'br':
      return zlib.brotliDecompressSync(raw);
    default:
      return raw;
  }
}

/**
 * co-body's refusals of JSON that parses, which would otherwise read as "not valid JSON": a body that is not an
 * object or array (`null`, `1`, `"x"`), and a `__proto__` key anywhere (bourne refuses it: prototype poisoning).
 */
function refusalOf(err: unknown): unknown {
  const { message, body } = (err ?? {}) as { message?: unknown; body?: unknown };
  if (message === 'Object contains forbidden prototype property') {
    return new ValidationError('Request body must not contain a "__proto__" key', [
      { field: 'body', message: 'must not contain a "__proto__" key' },
    ]);
  }
  if (message === 'invalid JSON, only supports object and array' && typeof body === 'string') {
    try {
      JSON.parse(body);
    } catch {
      return err;
    }
    return new ValidationError('Request body must be a JSON object', [
      { field: 'body', message: 'must be a JSON object' },
    ]);
  }
  return err;
}

export function jsonBody(): Koa.Middleware {
  const parse = koaBody({
    json: true,
    jsonTypes: JSON_TYPES,
    jsonLimit: JSON_BODY_LIMIT,
    jsonStrict: true,
    urlencoded: false,
    text: false,
    multipart: false,
    parsedMethods: [...BODY_METHODS] as never,
  });
  return async function jsonBodyMiddleware(ctx, next) {
    if (!BODY_METHODS.has(ctx.method) || !ctx.is(JSON_TYPES)) return next();
    const { charset } = ctx.request;
    if (charset && !UTF8.test(charset)) {
      throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', `Request bodies are read as UTF-8, not ${charset}`);
    }
    const chunks: Buffer[] = [];
    const keep = (chunk: Buffer) => chunks.push(chunk);
    // Attached in the same synchronous run as koa-body's own reader: no byte flows before both listen.
    ctx.req.on('data', keep);
    let parsed = false;
    try {
      await parse(ctx, () => {
        parsed = true;
        ctx.req.off('data', keep);
        const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        if (!isUtf8(contentOf(raw, ctx.get('Content-Encoding')))) {
          throw new AppError(400, 'VALIDATION_ERROR', 'Request body is not valid UTF-8');
        }
        chunks.length = 0;
        return next();
      });
    } catch (err) {
      throw parsed ? err : refusalOf(err);
    } finally {
      ctx.req.off('data', keep);
    }
  };
}
