/**
 * The error catalog (src/errors.ts) against its table here and its documentation (docs/errors.md),
 * as undici's test/errors.js pins its own: every class's code, name, base class and fields. A class
 * added to errors.ts without a row here, or a code without a section in docs/errors.md (or a
 * section whose code no longer exists), fails with a message saying exactly what to add or remove.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import * as errors from "../../src/errors.js";

type ErrorClass = new (...args: never[]) => errors.SyncmirrorError;

interface Row {
  cls: ErrorClass;
  code: string;
  /** Constructor arguments. */
  args: unknown[];
  /** Fields the instance must carry besides code and name. */
  fields?: Record<string, unknown>;
  retryable?: boolean;
}

const API_FIELDS = { method: "GET", route: "/sync-configs/{id}", status: 404, detail: { message: "gone" } };
const cause = new Error("underlying");
const api = (cls: ErrorClass, code: string, retryable = false): Row => ({
  cls,
  code,
  args: ["what to do next", API_FIELDS, { cause }],
  fields: { ...API_FIELDS, cause },
  retryable,
});
const plain = (cls: ErrorClass, code: string, retryable = false): Row => ({
  cls,
  code,
  args: ["what to do next", { cause }],
  fields: { message: "what to do next", cause },
  retryable,
});

const TABLE: readonly Row[] = [
  {
    cls: errors.ConfigError,
    code: "CONFIG_INVALID",
    args: ["cfg.yaml", [{ path: "api.base_url", message: "is required" }]],
    fields: { file: "cfg.yaml", message: "cfg.yaml: invalid config: api.base_url: is required" },
  },
  { cls: errors.ConfigExistsError, code: "CONFIG_EXISTS", args: ["my.yaml"], fields: { file: "my.yaml" } },
  plain(errors.UsageError, "USAGE"),
  api(errors.UnauthorizedError, "API_UNAUTHORIZED"),
  api(errors.FeatureDisabledError, "API_FEATURE_DISABLED"),
  api(errors.CannotStartError, "API_CANNOT_START"),
  api(errors.BadRequestError, "API_BAD_REQUEST"),
  api(errors.NotFoundError, "API_NOT_FOUND"),
  api(errors.ConflictError, "API_CONFLICT"),
  api(errors.NameTakenError, "API_NAME_TAKEN"),
  api(errors.UnavailableError, "API_UNAVAILABLE", true),
  api(errors.TriggerOutcomeUnknownError, "API_TRIGGER_OUTCOME_UNKNOWN"),
  api(errors.ContinueOutcomeUnknownError, "API_CONTINUE_OUTCOME_UNKNOWN"),
  api(errors.CreateOutcomeUnknownError, "API_CREATE_OUTCOME_UNKNOWN"),
  api(errors.BadResponseError, "API_BAD_RESPONSE"),
  {
    cls: errors.UnsupportedSchemaVersionError,
    code: "EXPORT_SCHEMA_UNSUPPORTED",
    args: ["run-1", "2.0", 250],
    fields: { syncId: "run-1", schemaVersion: "2.0", offset: 250 },
  },
  {
    cls: errors.DatabaseLockedError,
    code: "DB_LOCKED",
    args: ["data/mirror.db", "pid 42"],
    fields: { path: "data/mirror.db", holder: "pid 42" },
  },
  {
    cls: errors.DatabasePathError,
    code: "DB_PATH",
    args: ["/proc/x.db", "cannot create it", { cause }],
    fields: { path: "/proc/x.db", reason: "cannot create it", cause },
  },
  plain(errors.ListenError, "HTTP_LISTEN"),
  {
    cls: errors.SyncConfigNotAppliedError,
    code: "SYNC_CONFIG_NOT_APPLIED",
    args: ["eng-wiki", "Engineering wiki"],
    fields: { mirror: "eng-wiki", configName: "Engineering wiki" },
  },
  plain(errors.DatabaseError, "DB_ERROR"),
  plain(errors.DatabaseUnavailableError, "DB_UNAVAILABLE", true),
  plain(errors.DatabaseRefusedError, "DB_REFUSED"),
  {
    cls: errors.SchemaTooNewError,
    code: "DB_SCHEMA_TOO_NEW",
    args: ["the database", 9, 7, "0007_x"],
    fields: { database: "the database", databaseMigrations: 9, binaryMigrations: 7, binaryTag: "0007_x" },
  },
  {
    cls: errors.TargetNotEmptyError,
    code: "COPY_TARGET_NOT_EMPTY",
    args: ["$SYNCMIRROR_DATABASE_URL", [{ table: "resources", rows: 3 }]],
    fields: { database: "$SYNCMIRROR_DATABASE_URL", tables: [{ table: "resources", rows: 3 }] },
  },
  plain(errors.AbortedError, "ABORTED"),
  {
    cls: errors.LeaseLostError,
    code: "LEASE_LOST",
    args: ["eng-wiki", 3, "another process took the lease over", { cause }],
    fields: { mirror: "eng-wiki", epoch: 3, cause },
  },
  { cls: errors.OutputClosedError, code: "OUTPUT_CLOSED", args: [] },
  plain(errors.SearchQueryError, "SEARCH_QUERY_INVALID"),
  plain(errors.SearchUnavailableError, "SEARCH_UNAVAILABLE"),
  { cls: errors.NothingHeldError, code: "NOTHING_HELD", args: ["eng-wiki"], fields: { mirror: "eng-wiki" } },
  {
    cls: errors.MirrorBusyError,
    code: "MIRROR_BUSY",
    args: ["old-wiki", "host:42"],
    fields: { mirror: "old-wiki", holder: "host:42" },
  },
];

const construct = (row: Row) => new row.cls(...(row.args as never[]));

/** Every class errors.ts exports that derives from SyncmirrorError, by export name. */
const exportedClasses = (Object.entries(errors) as [string, unknown][]).filter(
  (entry): entry is [string, ErrorClass] =>
    typeof entry[1] === "function" && entry[1].prototype instanceof errors.SyncmirrorError,
);

/** The code a class's instances carry (undefined for an abstract base such as ApiError), or why none could be read. */
function probeCode(cls: ErrorClass): string | undefined | Error {
  try {
    return new cls(...(["probe", { method: "GET", route: "/probe" }] as never[])).code;
  } catch (error) {
    return error as Error;
  }
}

const DOCS = join(import.meta.dirname, "..", "..", "docs", "errors.md");

describe("the error catalog", () => {
  it.each(TABLE.map((row) => [row.code, row] as const))("%s: code, name, base class and fields", (_, row) => {
    const error = construct(row);
    expect(error.code).toBe(row.code);
    expect(error.name).toBe(row.cls.name);
    expect(error).toBeInstanceOf(errors.SyncmirrorError);
    expect(error).toBeInstanceOf(Error);
    expect(error.retryable).toBe(row.retryable ?? false);
    expect(error.message.length).toBeGreaterThan(0);
    if (row.fields) expect(error).toMatchObject(row.fields);
    if (row.fields && "method" in row.fields) expect(error).toBeInstanceOf(errors.ApiError);
  });

  it("has a row above for every error class src/errors.ts exports, and one code per class", () => {
    const missing = exportedClasses
      .filter(([, cls]) => !TABLE.some((row) => row.cls === cls))
      .flatMap(([name, cls]) => {
        const code = probeCode(cls);
        if (code === undefined) return []; // an abstract base: its subclasses carry the codes
        const known = code instanceof Error ? "its code" : `"${code}"`;
        return [
          `src/errors.ts exports ${name} with ${known}, but test/unit/errors.test.ts's TABLE has no row for it: add { cls: errors.${name}, code: ${known}, args: [its constructor's arguments], fields: {...} } and a section for the code in docs/errors.md`,
        ];
      });
    expect(missing, missing.join("\n")).toEqual([]);
    const codes = TABLE.map((row) => row.code);
    expect(new Set(codes).size, "two classes share a code").toBe(codes.length);
  });

  it("documents every code in docs/errors.md, and nothing else", () => {
    const text = readFileSync(DOCS, "utf8");
    const sections = [...text.matchAll(/^### `([A-Z][A-Z0-9_]*)`\n([\s\S]*?)(?=^##|(?![\s\S]))/gm)].map(
      ([, code, body]) => ({ code: code as string, body: body as string }),
    );
    const summary = [...text.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map(([, code]) => code as string);
    // Classes the table misses count too: their code is read from a probe instance.
    const probed = exportedClasses.map(([, cls]) => probeCode(cls)).filter((c) => typeof c === "string");
    const codes = [...new Set([...TABLE.map((row) => construct(row).code), ...probed])];
    const problems = [
      ...codes
        .filter((code) => !sections.some((s) => s.code === code))
        .map(
          (code) =>
            `docs/errors.md has no section for ${code}: add "### \`${code}\`" under the heading it belongs to, saying what it means and ending with "**What to do:** ..."`,
        ),
      ...codes
        .filter((code) => !summary.includes(code))
        .map(
          (code) =>
            `docs/errors.md's summary table has no row for ${code}: add "| \`${code}\` | <exit code> | <retried?> |"`,
        ),
      ...sections
        .filter((s) => !s.body.includes("**What to do:**"))
        .map((s) => `docs/errors.md's section for ${s.code} does not say "**What to do:**": add it`),
      ...[...new Set([...sections.map((s) => s.code), ...summary])]
        .filter((code) => !codes.includes(code))
        .map(
          (code) =>
            `docs/errors.md documents ${code}, which no class in src/errors.ts has any more: remove its section and its summary row`,
        ),
    ];
    expect(problems, problems.join("\n")).toEqual([]);
  });
});
