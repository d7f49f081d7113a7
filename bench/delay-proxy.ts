/**
 * PostgreSQL "on another host" for the bench: a TCP proxy on loopback that holds every chunk it
 * forwards for `oneWayMs` in each direction, so each statement's round trip costs about twice
 * that (Node's timers round up to whole milliseconds). Chunks keep their order: timers of equal
 * delay fire in the order they were set.
 *
 * It also counts round trips: on each connection, every time the client speaks after the server
 * has answered. Statements the client pipelines (sends before the answers to earlier ones arrive)
 * share one round trip, as they share one wait for the network. With BENCH_PROXY_TRACE=FILE set,
 * each round trip's statements (the start of their SQL, or a prepared statement's name) are
 * appended to FILE, one line per round trip (with the time since the proxy started and the
 * connection's number): where the round trips go.
 */
import { appendFileSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";

export interface DelayProxy {
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  url: string;
  /** Round trips over every connection since the proxy started. */
  roundTrips(): number;
  /**
   * The mirror's page transactions since the proxy started (those that record a page's access)
   * and the round trips they took, from the one that sent BEGIN to the one that sent COMMIT; a
   * BEGIN sent behind the previous transaction's COMMIT, in its round trip, adds none of its own.
   */
  pages(): { pages: number; roundTrips: number };
  close(): Promise<void>;
}

export async function startDelayProxy(databaseUrl: string, oneWayMs: number): Promise<DelayProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  let roundTrips = 0;
  let connections = 0;
  const started = performance.now();
  const pages = { pages: 0, roundTrips: 0 };
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 5432), target.hostname);
    // Both ends of a real connection to PostgreSQL turn Nagle off (node-postgres and the server set
    // TCP_NODELAY); with it on, the proxy held a small write behind the ACK of the one before it
    // (up to 40 ms on loopback), a delay no network path between them would add.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    // The server answered since the client last spoke: the client's next chunk starts a round trip.
    let answered = true;
    const trace = statementTrace(process.env.BENCH_PROXY_TRACE, ++connections, started);
    /** The open transaction: its round trips so far, and whether it recorded a page's access. */
    let open: { roundTrips: number; page: boolean } | undefined;
    /** The current round trip carries a COMMIT: a BEGIN behind it shares that round trip. */
    let committing = false;
    trace.onStatement = (statement) => {
      if (/^[PQ] BEGIN$/.test(statement)) open = { roundTrips: committing ? 0 : 1, page: false };
      else if (open && PAGE_STATEMENT.test(statement)) open.page = true;
      else if (open && /^[PQ] COMMIT$/.test(statement)) {
        if (open.page) {
          pages.pages++;
          pages.roundTrips += open.roundTrips;
        }
        open = undefined;
        committing = true;
      }
    };
    client.on("data", (chunk: Buffer) => {
      if (answered) {
        roundTrips++;
        committing = false;
        if (open) open.roundTrips++;
        trace.roundTrip();
      }
      answered = false;
      trace.read(chunk);
    });
    const forward = (from: Socket, to: Socket, delivered?: () => void) =>
      from.on("data", (chunk) =>
        setTimeout(() => {
          if (to.destroyed) return;
          to.write(chunk);
          delivered?.();
        }, oneWayMs),
      );
    forward(client, upstream);
    // Answered once an answer reaches the client: what it sends before then (the rest of a
    // pipelined batch still arriving) belongs to the round trip it started.
    forward(upstream, client, () => {
      answered = true;
    });
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
    roundTrips: () => roundTrips,
    pages: () => ({ ...pages }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A statement only a page transaction runs: the upsert of its rows' access (before and after issue 23). */
const PAGE_STATEMENT = /^[PB] syncmirror_(access_see_all|changes_record_seen)$/;

/**
 * The client's messages, parsed off the stream: each statement (Parse, simple Query, or Bind of a
 * statement prepared earlier) to `onStatement`, and each round trip's to `file`, if given.
 */
function statementTrace(file: string | undefined, connection: number, since: number) {
  let buffered = Buffer.alloc(0);
  let started = false;
  let line: string[] = [];
  const flush = () => {
    const at = (performance.now() - since).toFixed(1);
    if (file && line.length > 0) appendFileSync(file, `${at} ms #${connection} ${line.join(" | ")}\n`);
    line = [];
  };
  const statement = (text: string) => {
    line.push(text);
    trace.onStatement(text);
  };
  const cString = (b: Buffer, from: number) => {
    const end = b.indexOf(0, from);
    return { text: b.toString("utf8", from, end), next: end + 1 };
  };
  const trace = {
    onStatement: (_statement: string) => {},
    roundTrip: flush,
    read(chunk: Buffer) {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        if (!started) {
          // The startup (or SSL request) message has no type byte.
          if (buffered.length < 4) return;
          const length = buffered.readInt32BE(0);
          if (buffered.length < length) return;
          buffered = buffered.subarray(length);
          started = true;
          continue;
        }
        if (buffered.length < 5) return;
        const length = buffered.readInt32BE(1);
        if (buffered.length < length + 1) return;
        const type = String.fromCharCode(buffered[0] as number);
        const body = buffered.subarray(5, length + 1);
        if (type === "Q") statement(`Q ${cString(body, 0).text.replace(/\s+/g, " ").trim().slice(0, 70)}`);
        if (type === "P") {
          const name = cString(body, 0);
          statement(
            `P ${name.text || cString(body, name.next).text.replace(/\s+/g, " ").trim().slice(0, 70)}`,
          );
        }
        if (type === "B") {
          const portal = cString(body, 0);
          const name = cString(body, portal.next).text;
          if (name) statement(`B ${name}`);
        }
        buffered = buffered.subarray(length + 1);
      }
    },
  };
  return trace;
}
