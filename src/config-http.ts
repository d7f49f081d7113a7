/**
 * `http:` in the config (docs/reference/http.md): where the daemon listens and which variable holds the
 * bearer token. `listen` is `"host:port"`, or a bare port meaning every interface (`9464` is
 * `0.0.0.0:9464`). `$SYNCMIRROR_HTTP_LISTEN` overrides it, so replicas on one host can share one
 * config file; config.ts reads the variable and hands its value here.
 */
import { z } from "zod";
import { envName } from "./config-database.js";
import { DEFAULT_HTTP_TOKEN_ENV } from "./config-secrets.js";
import { ConfigError, type ConfigIssue } from "./errors.js";

export const HTTP_LISTEN_ENV = "SYNCMIRROR_HTTP_LISTEN";
export const DEFAULT_HTTP_PORT = 9464;
export const DEFAULT_LISTEN = `0.0.0.0:${DEFAULT_HTTP_PORT}`;

const LISTEN_ADVICE =
  'must be "host:port" (e.g. "0.0.0.0:9464", "127.0.0.1:9464", "[::1]:9464") or a port (9464)';
const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/;
const PORT = /^\d{1,5}$/;

/** `{ host, port }` of a listen value, or undefined when it is neither "host:port" nor a port. */
export function parseListen(value: string | number): { host: string; port: number } | undefined {
  const text = String(value).trim();
  const bare = PORT.test(text);
  const match = bare ? undefined : HOST_PORT.exec(text);
  if (!bare && !match) return undefined;
  const port = Number(bare ? text : match?.[2]);
  if (!Number.isInteger(port) || port > 65_535) return undefined;
  return { host: bare ? "0.0.0.0" : (match?.[1] ?? "").replace(/^\[|\]$/g, ""), port };
}

const listen = z.union([z.string(), z.number()]).superRefine((value, ctx) => {
  if (parseListen(value) === undefined) ctx.addIssue({ code: "custom", message: LISTEN_ADVICE });
});

export const HttpSection = z
  .strictObject({
    listen: listen.default(DEFAULT_LISTEN).meta({
      description:
        'Address of the daemon\'s HTTP server (`/metrics`, `/healthz`, `/readyz`, `/status`, `/v1/...`): "host:port", or a bare port meaning every interface. `$SYNCMIRROR_HTTP_LISTEN` overrides it.',
      examples: ["127.0.0.1:9464"],
    }),
    token_env: envName
      .default(DEFAULT_HTTP_TOKEN_ENV)
      .describe(
        "Name of the environment variable holding the bearer token of `/status` and every `/v1/` endpoint. Unset, `/v1/` answers 401 to everyone, and `/status` too unless `listen` is a loopback address.",
      ),
  })
  .describe("The daemon's HTTP server.");

export interface HttpConfig {
  readonly host: string;
  readonly port: number;
  /** Where the address came from, for messages: `http.listen` or `$SYNCMIRROR_HTTP_LISTEN`. */
  readonly listenFrom: string;
  readonly tokenEnv: string;
  /** Bearer token for endpoints that name users; from the environment, never logged. */
  readonly token: string | undefined;
}

/** The section with `$SYNCMIRROR_HTTP_LISTEN` (`envListen`) applied; a bad value names the variable. */
export function freezeHttp(
  file: string,
  data: z.infer<typeof HttpSection>,
  envListen: string | undefined,
  token: string | undefined,
): HttpConfig {
  const fromEnv = envListen !== undefined;
  const address = fromEnv ? parseListen(envListen) : parseListen(data.listen);
  if (address === undefined) {
    const issue: ConfigIssue = {
      path: "http.listen",
      message:
        envListen === ""
          ? `$${HTTP_LISTEN_ENV}, which overrides it, is set but empty: unset it or set it to host:port`
          : `$${HTTP_LISTEN_ENV}, which overrides it, is ${JSON.stringify(envListen)}: it ${LISTEN_ADVICE}`,
    };
    throw new ConfigError(file, [issue]);
  }
  return Object.freeze({
    ...address,
    listenFrom: fromEnv ? `$${HTTP_LISTEN_ENV}` : "http.listen",
    tokenEnv: data.token_env,
    token: token === "" ? undefined : token,
  });
}
