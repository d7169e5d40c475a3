// Edges of the HTTP layer (lib/http) that a mutation hunt found unpinned. CORS: the exact list of exposed response
// headers (also on the plain OPTIONS that is an ordinary 405), origins compared case-insensitively, Vary: Origin
// on a refused preflight. Bodies: 415 for a one-byte, a chunked or an unknown-encoding body that is not JSON. The
// image upload's bounds: a declared length of exactly the largest form is read, one byte more refused unread; a
// full form's stray field is named. Numbers: page up to 10^9, a path id of up to 10 digits. Routing: a single-
// method path is 405, not 404. Auth: several spaces after "Bearer". The response memo never answers a request
// without Host.
import net from 'node:net';
import test from 'ava';
import { originMatcher } from '../../lib/http/cors';
import { assertError } from '../helpers/assertions';
import { createMember, createProduct } from '../helpers/factories';
import { startTestApp, type TestApp } from '../helpers/harness';
import { until } from '../helpers/until';
import { rawExchange as rawHttp } from '../helpers/raw-http';

const ORIGIN = 'https://app.example.com';

let app: TestApp;
test.before(async () => {
  app = await startTestApp({ env: { CORS_ORIGINS: `${ORIGIN},https://*.shop.test` } });
});
test.after.always(async () => {
  await app?.close();
});

/** The names of Access-Control-Expose-Headers, lower-cased, in order. */
const exposed = (headers: Headers) =>
  (headers.get('access-control-expose-headers') ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);

const EXPOSED = ['x-request-id', 'retry-after', 'etag', 'allow', 'idempotent-replayed'];

const rawExchange = (request: string) => rawHttp(app.url, request);

test('CORS exposes X-Request-Id, Retry-After, ETag, Allow and Idempotent-Replayed to an allowed page', async (t) => {
  const res = await app.request('GET', '/api/v1/categories', { headers: { Origin: ORIGIN } });
  t.is(res.status, 200, res.text);
  t.true(Array.isArray(res.body));
  t.is(res.headers.get('access-control-allow-origin'), ORIGIN);
  // A page reads Retry-After of a 429/503 and the ETag it revalidates with only when they are exposed.
  t.deepEqual(exposed(res.headers), EXPOSED);
  t.truthy(res.headers.get('etag'));
});

test('a plain OPTIONS from an allowed origin is a 405 whose Allow and X-Request-Id the page may read', async (t) => {
  const res = await app.request('OPTIONS', '/api/v1/categories', { headers: { Origin: ORIGIN } });
  assertError(t, res, 405, 'METHOD_NOT_ALLOWED', '/api/v1/categories');
  t.is(res.headers.get('access-control-allow-origin'), ORIGIN);
  t.is(res.headers.get('access-control-allow-credentials'), 'true');
  t.true((res.headers.get('allow') ?? '').includes('GET'));
  t.deepEqual(exposed(res.headers), EXPOSED);
});

test('an Origin spelled in capitals matches the allow-list and is echoed as sent', async (t) => {
  t.true(originMatcher([ORIGIN])('https://APP.Example.COM'));
  t.true(originMatcher(['https://*.shop.test'])('https://A.SHOP.TEST'));
  const origin = 'https://App.Example.com';
  const res = await app.request('GET', '/api/v1/categories', { headers: { Origin: origin } });
  t.is(res.status, 200, res.text);
  t.true(Array.isArray(res.body));
  t.is(res.headers.get('access-control-allow-origin'), origin);
  t.is(res.headers.get('access-control-allow-credentials'), 'true');
});

test('a Content-Encoding the body parser does not know is 415 UNSUPPORTED_MEDIA_TYPE, not a 400', async (t) => {
  const res = await app.request('POST', '/api/v1/auth/login', {
    raw: JSON.stringify({ email: 'nobody@example.test', password: 'Password-123' }),
    headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'compress' },
  });
  assertError(t, res, 415, 'UNSUPPORTED_MEDIA_TYPE', '/api/v1/auth/login');
  t.is(res.body.message, 'Unsupported request encoding');
  t.is(res.body.errors, undefined);
});

/** The largest form an upload may declare: five files of 10 MB and 1 MB for the parts' heads. */
const LARGEST_FORM = 5 * 10 * 1024 * 1024 + 1024 * 1024;

/**
 * An upload of one file in "images" declaring `declared` bytes; with `sendBody` the whole body (exactly that
 * many bytes: the file is what is left after its part's head and the form's end) is sent unless an answer comes
 * first. Returns the status line and the JSON body of the answer.
 */
async function uploadDeclaring(productId: number, token: string, declared: number, sendBody: boolean) {
  const url = new URL(app.url);
  const socket = net.connect(Number(url.port), url.hostname);
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk) => (text += chunk));
  socket.on('error', () => {}); // the server may close once it has answered
  try {
    const partHead =
      '--edge\r\nContent-Disposition: form-data; name="images"; filename="big.png"\r\n' +
      'Content-Type: image/png\r\n\r\n';
    const formEnd = '\r\n--edge--\r\n';
    socket.write(
      `POST /api/v1/products/${productId}/images HTTP/1.1\r\nHost: x\r\n` +
        `Authorization: Bearer ${token}\r\nContent-Type: multipart/form-data; boundary=edge\r\n` +
        `Content-Length: ${declared}\r\n\r\n`,
    );
    if (sendBody) {
      socket.write(partHead);
      let left = declared - Buffer.byteLength(partHead) - Buffer.byteLength(formEnd);
      const chunk = Buffer.alloc(1024 * 1024, 7);
      while (left > 0 && text === '') {
        const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
        left -= piece.length;
        if (!socket.write(piece)) await new Promise((resolve) => socket.once('drain', resolve));
      }
      if (text === '') socket.write(formEnd);
    }
    const answered = () => {
      const [head, body = ''] = text.split('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? NaN);
      return body.length >= length;
    };
    await until(answered, 30_000, () => text);
    const [head, body] = text.split('\r\n\r\n');
    return { statusLine: head.split('\r\n')[0], body: JSON.parse(body) };
  } finally {
    socket.destroy();
  }
}

test('an upload declaring exactly the largest form is read (its 10 MB+ file: FILE_TOO_LARGE); one byte more is refused unread', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id);

  // Exactly the bound: the form is parsed, and its one file is refused for its own size.
  const atBound = await uploadDeclaring(productId, seller.token, LARGEST_FORM, true);
  t.regex(atBound.statusLine, /^HTTP\/1\.1 413 /);
  t.like(atBound.body, {
    status: 413,
    code: 'FILE_TOO_LARGE',
    message: 'A file is larger than 10 MB',
    path: `/api/v1/products/${productId}/images`,
  });

  // One byte over: 413 PAYLOAD_TOO_LARGE before any of the body is sent.
  const over = await uploadDeclaring(productId, seller.token, LARGEST_FORM + 1, false);
  t.regex(over.statusLine, /^HTTP\/1\.1 413 /);
  t.like(over.body, { status: 413, code: 'PAYLOAD_TOO_LARGE', path: `/api/v1/products/${productId}/images` });
  t.regex(over.body.message, new RegExp(`\\(${LARGEST_FORM + 1} bytes declared\\)`));

  const images = await app.db('product_images').where({ product_id: productId }).count({ n: '*' });
  t.is(Number(images[0].n), 0);
});

test('a full upload (5 files) with a stray text field is 400 naming that field, not a parser refusal of the form', async (t) => {
  const seller = await createMember(app, 'SELLER');
  const productId = await createProduct(app, seller.id);
  const form = new FormData();
  for (let i = 0; i < 5; i++) form.append('images', new Blob([Buffer.from('not checked yet')]), `f${i}.png`);
  form.append('note', 'hello');
  const res = await app.request('POST', `/api/v1/products/${productId}/images`, {
    token: seller.token,
    raw: form,
  });
  assertError(t, res, 400, 'VALIDATION_ERROR', `/api/v1/products/${productId}/images`);
  t.deepEqual(res.body.errors, [{ field: 'note', message: 'unknown field' }]);
  const images = await app.db('product_images').where({ product_id: productId }).count({ n: '*' });
  t.is(Number(images[0].n), 0);
});

test('page accepts up to 1000000000 (an empty page past the end); one more is 400 naming query.page', async (t) => {
  const last = await app.request('GET', '/api/v1/products?page=1000000000&size=100');
  t.is(last.status, 200, last.text);
  t.like(last.body, { content: [], page: 1_000_000_000, size: 100, hasNext: false });
  const over = await app.request('GET', '/api/v1/products?page=1000000001');
  assertError(t, over, 400, 'VALIDATION_ERROR', '/api/v1/products');
  t.deepEqual(over.body.errors, [{ field: 'query.page', message: 'page is too large' }]);
});

test('a one-byte body that is not JSON is 415 UNSUPPORTED_MEDIA_TYPE, as a longer one is', async (t) => {
  const res = await app.request('POST', '/api/v1/auth/login', {
    raw: 'x',
    headers: { 'Content-Type': 'text/plain' },
  });
  assertError(t, res, 415, 'UNSUPPORTED_MEDIA_TYPE', '/api/v1/auth/login');
  t.is(res.body.message, 'Content-Type must be application/json');
});

test('a chunked body (no Content-Length) that is not JSON is 415 UNSUPPORTED_MEDIA_TYPE too', async (t) => {
  const res = await rawExchange(
    'POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n' +
      'Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n',
  );
  t.regex(res.head, /^HTTP\/1\.1 415 /);
  t.like(res.body, { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', path: '/api/v1/auth/login' });
  t.is(res.body.message, 'Content-Type must be application/json');
  t.is(res.body.requestId, /x-request-id: (\S+)/i.exec(res.head)?.[1]);
});

test('an id in the path is read up to 10 digits: 2^31 - 1 is an unknown product (404), 2^31 is 400 too large, 11 digits 400 not an integer', async (t) => {
  const largest = await app.request('GET', '/api/v1/products/2147483647');
  assertError(t, largest, 404, 'NOT_FOUND', '/api/v1/products/2147483647');

  const tooLarge = await app.request('GET', '/api/v1/products/2147483648');
  assertError(t, tooLarge, 400, 'VALIDATION_ERROR', '/api/v1/products/2147483648');
  t.deepEqual(tooLarge.body.errors, [{ field: 'params.productId', message: 'productId is too large' }]);

  const elevenDigits = await app.request('GET', '/api/v1/products/10000000000');
  assertError(t, elevenDigits, 400, 'VALIDATION_ERROR', '/api/v1/products/10000000000');
  t.deepEqual(elevenDigits.body.errors, [
    { field: 'params.productId', message: 'productId must be a positive integer' },
  ]);
});

test('a path with a single method answers the others 405 with that one in Allow, not 404', async (t) => {
  const res = await app.request('GET', '/api/v1/auth/login');
  assertError(t, res, 405, 'METHOD_NOT_ALLOWED', '/api/v1/auth/login');
  t.is(res.headers.get('allow'), 'POST');
});

test('a preflight from a disallowed origin still says Vary: Origin (a cache must not hand it to an allowed one)', async (t) => {
  const res = await app.request('OPTIONS', '/api/v1/orders', {
    headers: { Origin: 'https://evil.example.org', 'Access-Control-Request-Method': 'POST' },
  });
  t.is(res.status, 204);
  t.is(res.text, '');
  t.is(res.headers.get('access-control-allow-origin'), null);
  t.true((res.headers.get('vary') ?? '').split(/\s*,\s*/).includes('Origin'));
});

test('a JSON-flavoured media type other than application/json (application/vnd.api+json) is 415', async (t) => {
  const res = await app.request('POST', '/api/v1/auth/login', {
    raw: JSON.stringify({ email: 'nobody@example.test', password: 'Password-123' }),
    headers: { 'Content-Type': 'application/vnd.api+json' },
  });
  assertError(t, res, 415, 'UNSUPPORTED_MEDIA_TYPE', '/api/v1/auth/login');
  t.is(res.body.message, 'Content-Type must be application/json');
});

test('"Bearer" followed by more than one space still introduces the token', async (t) => {
  const buyer = await createMember(app, 'BUYER');
  const res = await app.request('GET', '/api/v1/members/me', {
    headers: { Authorization: `Bearer   ${buyer.token}` },
  });
  t.is(res.status, 200, res.text);
  t.like(res.body, { id: buyer.id, email: buyer.email, role: 'BUYER' });
});

test('an HTTP/1.1 GET without Host is 400 even when the response memo holds that URL', async (t) => {
  // Twice through the pipeline: the memo has recorded the list, and replays it to a normal request.
  for (let i = 0; i < 2; i++) t.is((await app.request('GET', '/api/v1/categories')).status, 200);
  const replays = app.bundle.responseMemo.stats().replays;
  t.is((await app.request('GET', '/api/v1/categories')).status, 200);
  t.true(app.bundle.responseMemo.stats().replays > replays);

  const res = await rawExchange('GET /api/v1/categories HTTP/1.1\r\nConnection: close\r\n\r\n');
  t.regex(res.head, /^HTTP\/1\.1 400 /);
  t.like(res.body, { status: 400, code: 'VALIDATION_ERROR', path: '/api/v1/categories' });
  t.deepEqual(res.body.errors, [{ field: 'Host', message: 'is required' }]);
  t.is(res.body.requestId, /x-request-id: (\S+)/i.exec(res.head)?.[1]);
});
