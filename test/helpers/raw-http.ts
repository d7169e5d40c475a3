// Requests written byte for byte on their own connection, for what fetch will not send (no Host, a chunked body
// of our choosing, a bare multipart head): the server answers and closes (`Connection: close`).
import net from 'node:net';

/** One request written as is to the server at `baseUrl`: its status line and headers, status and parsed JSON body. */
export async function rawExchange(
  baseUrl: string,
  request: string,
): Promise<{ head: string; status: number; body: any }> {
  const url = new URL(baseUrl);
  const socket = net.connect(Number(url.port), url.hostname);
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk) => (text += chunk));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.write(request);
  await closed;
  const [head, body] = text.split('\r\n\r\n');
  return { head, status: Number(head.split(' ')[1]), body: body ? JSON.parse(body) : undefined };
}
