// A TCP proxy of the tests' own (node:net) between the service and MariaDB (or NATS), to make the server fail
// the ways networks fail: refuse new connections (reset at once), black-hole (accept, never forward,
// existing connections too), cut every connection, cut the connection that sends a given query
// (e.g. COMMIT) right after forwarding it, so the outcome is unknown to the client, silence it from a
// given request on, black-hole the whole database from a given request on (the request forwarded or not), or hold
// a query back for a while (a packet late on the wire) and deliver it even when the client gave up on the
// connection meanwhile.
import net from 'node:net';

export type ProxyMode = 'pass' | 'refuse' | 'blackhole';

interface Link {
  client: net.Socket;
  upstream: net.Socket | null;
  /** Bytes were dropped on this link: it can never carry the protocol again. */
  holed: boolean;
  /** This link sent the trap's `after` text. */
  primed: boolean;
  /** What the client sent behind a held-back packet (`delayOn`), forwarded after it; null when nothing is held. */
  held: Buffer[] | null;
  /** The server side stays open when the client leaves (`silenceOn` with `halfOpen`), until `pass()`. */
  halfOpen: boolean;
}

/** What a trap does to the packet that springs it (`cutOn`, `delayOn`, `silenceOn`, `blackholeOn`). */
type TrapAction =
  | { kind: 'cut'; forward: boolean; blackoutMs: number }
  | { kind: 'delay'; delayMs: number; onHold?: () => void }
  | { kind: 'silence'; halfOpen: boolean }
  | { kind: 'blackhole'; forward: boolean };

interface QueryTrap {
  text: Buffer;
  after: Buffer | null;
  action: TrapAction;
  sprung: () => void;
}

export interface TcpProxy {
  port: number;
  /** `mysql://root@127.0.0.1:<port>/<database>` for a database URL of the real server. */
  urlFor(databaseUrl: string): string;
  mode(): ProxyMode;
  /** Forwards again; links that were black-holed are cut (they lost bytes). */
  pass(): void;
  /** New connections are reset at once; existing ones keep working. */
  refuse(): void;
  /** Nothing is forwarded any more, on new and existing connections; nothing is closed either. */
  blackhole(): void;
  /** Closes every connection, both sides. */
  cutAll(): void;
  /**
   * The next time a client sends a packet containing `text`, the link is cut: after forwarding it
   * (`forward: true`, the server may act on it) or instead of forwarding it; with `after`, only on a
   * connection that sent `after` before (the COMMIT of the transaction that inserted orders). With
   * `blackoutMs`, every connection is cut at that moment and new ones are refused that long (the service
   * cannot check the outcome either). Resolves when that happened.
   */
  cutOn(text: string, options: { forward: boolean; after?: string; blackoutMs?: number }): Promise<void>;
  /**
   * The next time a client sends a packet containing `text` (on a connection that sent `after` before), that link
   * goes silent: the packet and everything after it is dropped both ways, and nothing is closed (a server that
   * stopped answering one connection). With `halfOpen`, the server is not told either when the client closes the
   * connection (a half-open connection: a middlebox lost its state). Resolves when that happened; `pass()` cuts
   * the link afterwards.
   */
  silenceOn(text: string, options?: { after?: string; halfOpen?: boolean }): Promise<void>;
  /**
   * The next time a client sends a packet containing `text` (on a connection that sent `after` before), the proxy
   * black-holes everything as `blackhole()` does, after forwarding that packet (`forward: true`: the server acts on
   * it, its answer is lost) or instead of it. Resolves when that happened; `pass()` ends it.
   */
  blackholeOn(text: string, options: { forward: boolean; after?: string }): Promise<void>;
  /**
   * The next time a client sends a packet containing `text` (on a connection that sent `after` before), that
   * packet reaches the server `delayMs` late, and what the client sends meanwhile after it. A client that closes
   * the connection meanwhile closes it only after that: the server gets the packet, then the end, as a packet
   * still on the wire arrives before the close that followed it. Resolves when the packet was delivered; `onHold`
   * is called when it was caught.
   */
  delayOn(text: string, options: { after?: string; delayMs: number; onHold?: () => void }): Promise<void>;
  connections(): number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: ProxyMode = 'pass';
  const links = new Set<Link>();
  let trap: QueryTrap | null = null;

  /** Nothing is forwarded any more, on new and existing links; nothing is closed either. */
  const blackhole = () => {
    mode = 'blackhole';
    for (const link of links) link.holed = true;
  };

  /** Server sides of half-open links whose client left: closed by `pass()` and `close()`. */
  const orphans = new Set<net.Socket>();

  const cut = (link: Link) => {
    if (!links.delete(link)) return;
    link.client.destroy();
    if (link.held) return; // closed once the held packets went
    if (link.halfOpen && link.upstream) orphans.add(link.upstream);
    else link.upstream?.destroy();
  };
  const closeOrphans = () => {
    for (const upstream of orphans) upstream.destroy();
    orphans.clear();
  };

  /** Sets the one trap (the next packet containing `text`, on a link that sent `after` since); resolves when sprung. */
  const arm = (text: string, after: string | undefined, action: TrapAction): Promise<void> =>
    new Promise<void>((resolve) => {
      for (const link of links) link.primed = false;
      trap = { text: Buffer.from(text), after: after ? Buffer.from(after) : null, action, sprung: resolve };
    });

  const server = net.createServer((client) => {
    if (mode === 'refuse') {
      client.resetAndDestroy();
      return;
    }
    const link: Link = {
      client,
      upstream: null,
      holed: mode === 'blackhole',
      primed: false,
      held: null,
      halfOpen: false,
    };
    links.add(link);
    client.on('error', () => cut(link));
    client.on('close', () => cut(link));
    if (link.holed) return; // accepted, never answered
    const upstream = net.connect(target.port, target.host);
    link.upstream = upstream;
    upstream.on('error', () => cut(link));
    upstream.on('close', () => cut(link));
    upstream.on('data', (chunk) => {
      if (!link.holed && !client.destroyed) client.write(chunk);
    });
    client.on('data', (chunk) => {
      if (link.holed) return;
      if (link.held) {
        link.held.push(chunk);
        return;
      }
      if (trap?.after && chunk.includes(trap.after)) link.primed = true;
      if (trap && (!trap.after || link.primed) && chunk.includes(trap.text)) {
        const { action, sprung } = trap;
        trap = null;
        if (action.kind === 'delay') {
          const held: Buffer[] = [chunk];
          link.held = held;
          action.onHold?.();
          setTimeout(() => {
            for (const late of held) upstream.write(late);
            link.held = null;
            if (!links.has(link)) upstream.end(); // the client left meanwhile
            sprung();
          }, action.delayMs);
          return;
        }
        if (action.kind === 'silence') {
          link.holed = true;
          link.halfOpen = action.halfOpen;
          sprung();
          return;
        }
        if (action.kind === 'blackhole') {
          if (action.forward) upstream.write(chunk);
          blackhole();
          sprung();
          return;
        }
        const spring = () => {
          if (action.blackoutMs > 0) {
            mode = 'refuse';
            for (const other of [...links]) cut(other);
            setTimeout(() => {
              if (mode === 'refuse') mode = 'pass';
            }, action.blackoutMs);
          }
          cut(link);
          sprung();
        };
        if (action.forward) {
          // the server gets the query, its answer is lost, then the connection drops
          upstream.write(chunk);
          link.holed = true;
          setTimeout(spring, 50);
        } else {
          spring();
        }
        return;
      }
      upstream.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;

  return {
    port,
    urlFor(databaseUrl) {
      const url = new URL(databaseUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    mode: () => mode,
    pass() {
      for (const link of links) if (link.holed) cut(link);
      closeOrphans();
      mode = 'pass';
    },
    refuse() {
      mode = 'refuse';
    },
    blackhole,
    cutAll() {
      for (const link of [...links]) cut(link);
    },
    cutOn: (text, options) =>
      arm(text, options.after, {
        kind: 'cut',
        forward: options.forward,
        blackoutMs: options.blackoutMs ?? 0,
      }),
    delayOn: (text, options) =>
      arm(text, options.after, { kind: 'delay', delayMs: options.delayMs, onHold: options.onHold }),
    silenceOn: (text, options) =>
      arm(text, options?.after, { kind: 'silence', halfOpen: options?.halfOpen ?? false }),
    blackholeOn: (text, options) => arm(text, options.after, { kind: 'blackhole', forward: options.forward }),
    connections: () => links.size,
    async close() {
      for (const link of [...links]) cut(link);
      closeOrphans();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
