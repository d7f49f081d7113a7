import type { z } from "zod";

/** An error answer of the simulated service: status plus the `detail` body (string or object). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === "string" ? detail : `HTTP ${status}`);
    this.name = "HttpError";
  }
}

export function notFound(what: string): HttpError {
  return new HttpError(404, `${what} not found`);
}

/** A FastAPI-style validation error (422) for one body or query location. */
export function invalid(
  loc: (string | number)[],
  msg: string,
  type = "value_error",
  input?: unknown,
): HttpError {
  return new HttpError(422, [{ type, loc, msg, input }]);
}

/** The JSON body as an object; 422 for anything else (missing, array, scalar). */
export function requireObject(body: unknown): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalid(["body"], "Input should be a valid dictionary or object", "dict_type", body);
  }
  return body as Record<string, unknown>;
}

/** The JSON body as `schema` reads it; otherwise FastAPI's 422, one entry per issue at its place. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(requireObject(body));
  if (result.success) return result.data;
  throw new HttpError(
    422,
    result.error.issues.map((issue) => {
      const path = issue.path.map((key) => (typeof key === "symbol" ? String(key) : key));
      const input = path.reduce<unknown>(
        (value, key) =>
          typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined,
        body,
      );
      const loc = ["body", ...path];
      return input === undefined
        ? { type: "missing", loc, msg: "Field required" }
        : { type: issue.code, loc, msg: issue.message, input };
    }),
  );
}
