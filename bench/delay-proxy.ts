/**
 * PostgreSQL "on another host" for the bench: a TCP proxy on loopback that holds every chunk it
 * forwards for `oneWayMs` in each direction, so each statement's round trip costs about twice
 * that (Node's timers round up to whole milliseconds). Chunks keep their order: timers of equal
 * delay fire in the order they were set.
 */
import { connect, createServer, type Socket } from "node:net";

export interface DelayProxy {
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  url: string;
  close(): Promise<void>;
}

export async function startDelayProxy(databaseUrl: string, oneWayMs: number): Promise<DelayProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    const forward = (from: Socket, to: Socket) =>
      from.on("data", (chunk) => setTimeout(() => to.destroyed || to.write(chunk), oneWayMs));
    forward(client, upstream);
    forward(upstream, client);
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
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return {
    url: url.toString(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
