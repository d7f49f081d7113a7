/**
 * A port that cannot be bound, as one message naming the address, the setting it came from and what
 * to do: the daemon's http.listen and the simulator's --port alike.
 */
import { ListenError } from "./errors.js";

export function listenError(
  host: string,
  port: number,
  from: string,
  cause: NodeJS.ErrnoException,
): ListenError {
  const why =
    cause.code === "EADDRINUSE"
      ? "the port is already in use: stop the other process or pick another port"
      : cause.code === "EADDRNOTAVAIL"
        ? "that address is not on this host: use 0.0.0.0 or one of its addresses"
        : cause.code === "EACCES"
          ? "this user may not bind that port: use a port above 1023"
          : `${cause.code ?? cause.message}`;
  return new ListenError(`cannot listen on ${host}:${port} (${from}): ${why}`, { cause });
}
