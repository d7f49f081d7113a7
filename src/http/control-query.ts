/**
 * A control (`POST /v1/mirrors/{name}/...`) takes its options in the JSON body only. A parameter
 * in the query string is refused rather than ignored: `/trigger?mode=full` read as no mode would
 * start the incremental pass nobody asked for, as a GET endpoint refuses a parameter it does not know.
 */
import { errorReply, type Reply } from "../http-server.js";

/**
 * The 400 for the first parameter of `url`'s query string, or undefined when it has none. One with
 * an empty value (`?mode=`) counts as not given, as on every endpoint.
 */
export function queryRefusal(url: URL): Reply | undefined {
  const name = [...url.searchParams].find(([, value]) => value !== "")?.[0];
  if (name === undefined) return undefined;
  return errorReply(
    400,
    "USAGE",
    `${name}: unknown parameter: a control reads nothing from the query string; send its options as a JSON body, such as {"mode":"full"}`,
  );
}
