/**
 * A TCP proxy on loopback in front of the PostgreSQL server that a test can cut (every connection
 * dropped, new ones refused, as when the network to the database goes away) and restore on the same
 * port: the database is unreachable from the processes behind it and fine for everyone else.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

export interface CuttableProxy {
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  url: string;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startCuttableProxy(databaseUrl: string): Promise<CuttableProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  const pipe = (client: Socket) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    client.pipe(upstream).pipe(client);
    track(sockets, client, upstream);
  };
  let server: Server = createServer(pipe);
  const stop = () => closeProxy(server, sockets);
  const port = await listen(server, 0);
  return {
    url: proxyUrl(databaseUrl, port),
    cut: stop,
    async restore() {
      server = createServer(pipe);
      await listen(server, port);
    },
    close: () => (server.listening ? stop() : Promise.resolve()),
  };
}

export interface HoldingProxy {
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  url: string;
  /** How many times `text` went from the processes behind the proxy to the server so far. */
  sent(text: string): number;
  /** Whether a connection's bytes holding the held text are waiting for `release()`. */
  holding(): boolean;
  /** Forwards what was held, and everything after it. */
  release(): void;
  close(): Promise<void>;
}

/**
 * A TCP proxy on loopback in front of the PostgreSQL server that holds back the first client bytes
 * holding `hold` (a statement's text, such as a LISTEN) until `release()`: that connection's
 * statement waits while every other connection goes through, so a test decides when it runs.
 */
export async function startHoldingProxy(databaseUrl: string, hold: string): Promise<HoldingProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  let traffic = "";
  let held: (() => void) | undefined;
  let released = false;
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    upstream.pipe(client);
    const forward = (chunk: Buffer) => {
      traffic += chunk.toString("latin1");
      upstream.write(chunk);
    };
    client.on("data", (chunk: Buffer) => {
      if (!released && held === undefined && chunk.toString("latin1").includes(hold)) {
        client.pause();
        held = () => {
          forward(chunk);
          client.resume();
        };
        return;
      }
      forward(chunk);
    });
    track(sockets, client, upstream);
  });
  const port = await listen(server, 0);
  return {
    url: proxyUrl(databaseUrl, port),
    sent: (text) => traffic.split(text).length - 1,
    holding: () => held !== undefined && !released,
    release() {
      released = true;
      held?.();
    },
    close: () => closeProxy(server, sockets),
  };
}

/** Either side of a proxied connection closing or failing ends both. */
function track(sockets: Set<Socket>, client: Socket, upstream: Socket): void {
  for (const s of [client, upstream]) {
    sockets.add(s);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(s);
    };
    s.on("close", end);
    s.on("error", end);
  }
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve) =>
    server.listen(port, "127.0.0.1", () => resolve((server.address() as { port: number }).port)),
  );
}

/** `databaseUrl` with its host and port replaced by the proxy's. */
function proxyUrl(databaseUrl: string, port: number): string {
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return url.toString();
}

function closeProxy(server: Server, sockets: Set<Socket>): Promise<void> {
  return new Promise((resolve) => {
    for (const s of sockets) s.destroy();
    server.close(() => resolve());
  });
}

export interface FreezableProxy {
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  url: string;
  /**
   * Stalls the network: nothing is forwarded either way and new connections are accepted but not
   * connected on, as when packets are dropped (no reset, no refusal: the process waits).
   */
  freeze(): void;
  /** Forwards everything held back, in order, and everything after it. */
  thaw(): void;
  close(): Promise<void>;
}

/** A TCP proxy on loopback in front of the PostgreSQL server that a test can freeze and thaw. */
export async function startFreezableProxy(databaseUrl: string): Promise<FreezableProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  let frozen = false;
  let waiting: (() => void)[] = [];
  const server = createServer((client) => {
    client.pause();
    const open = () => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      client.pipe(upstream).pipe(client);
      track(sockets, client, upstream);
      client.resume();
    };
    if (frozen) {
      sockets.add(client);
      waiting.push(open);
    } else open();
  });
  const port = await listen(server, 0);
  return {
    url: proxyUrl(databaseUrl, port),
    freeze() {
      frozen = true;
      for (const s of sockets) s.pause();
    },
    thaw() {
      frozen = false;
      for (const s of sockets) s.resume();
      for (const open of waiting) open();
      waiting = [];
    },
    close: () => closeProxy(server, sockets),
  };
}
