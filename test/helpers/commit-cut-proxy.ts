// A TCP proxy between the service and MariaDB that can lose one COMMIT: `applied` forwards it and then
// cuts the client's connection before the reply (the transaction committed, the client cannot know),
// `lost` cuts without forwarding (the server rolls back). `blackout` also cuts every connection and
// refuses new ones for a while, so the service cannot check the outcome either.
import net from 'node:net';

export type CutMode = 'applied' | 'lost';

// A MySQL COM_QUERY packet: 3-byte length, sequence id, command 0x03, then the SQL (knex sends "COMMIT;").
const COMMIT = Buffer.from('\x03COMMIT', 'latin1');

export interface CommitCutProxy {
  port: number;
  /** Cuts the next COMMIT that passes, in this mode; `blackoutMs` then refuses connections that long. */
  armCut(mode: CutMode, blackoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startCommitCutProxy(target: { host: string; port: number }): Promise<CommitCutProxy> {
  const sockets = new Set<net.Socket>();
  let armed: { mode: CutMode; blackoutMs: number; done: () => void } | null = null;
  let refuseUntil = 0;

  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  };

  const server = net.createServer((client) => {
    track(client);
    if (Date.now() < refuseUntil) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    track(upstream);
    upstream.on('data', (chunk) => client.write(chunk));
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.on('data', (chunk) => {
      const cut = armed;
      if (!cut || chunk.indexOf(COMMIT) === -1) {
        upstream.write(chunk);
        return;
      }
      armed = null;
      if (cut.mode === 'applied') {
        // The server gets the COMMIT; its reply never reaches the client.
        upstream.removeAllListeners('data');
        upstream.write(chunk, () => setTimeout(() => upstream.destroy(), 200));
        client.destroy();
      } else {
        upstream.destroy();
        client.destroy();
      }
      if (cut.blackoutMs > 0) {
        refuseUntil = Date.now() + cut.blackoutMs;
        for (const socket of sockets) if (socket !== upstream) socket.destroy();
      }
      cut.done();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    armCut(mode, blackoutMs = 0) {
      return new Promise<void>((done) => {
        armed = { mode, blackoutMs, done };
      });
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
