import { describe, expect, it } from "vitest";
import { DatabaseError, DatabaseRefusedError, DatabaseUnavailableError } from "../../src/errors.js";
import { connectError, createNaming, storeError } from "../../src/store/postgres/open.js";

const URL = "postgres://mirror:p%40ss-w0rd@db.internal:5432/mirror";
const naming = createNaming(URL, "SYNCMIRROR_DATABASE_URL");
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe("PostgreSQL connection errors", () => {
  it("says to fix the URL's password for a failed login, naming the env var and never the password", () => {
    const error = connectError(
      pgError("28P01", 'password authentication failed for user "mirror" (p@ss-w0rd)'),
      naming,
    );
    expect(error).toBeInstanceOf(DatabaseRefusedError);
    expect(error.message).toContain(
      "fix the user or password in the URL that $SYNCMIRROR_DATABASE_URL holds",
    );
    expect(error.message).not.toMatch(/p@ss-w0rd|p%40ss-w0rd/);
    expect(error.message).not.toContain(URL);
  });

  it("says to create the database or fix its name when it does not exist", () => {
    const error = connectError(pgError("3D000", 'database "mirror" does not exist'), naming);
    expect(error).toBeInstanceOf(DatabaseRefusedError);
    expect(error.message).toContain(
      "create it (createdb) or fix the database name in $SYNCMIRROR_DATABASE_URL",
    );
  });

  it("calls a refused, timed-out or starting server, or a database closed to connections, unavailable and retryable", () => {
    for (const cause of [
      pgError("ECONNREFUSED", "connect ECONNREFUSED 10.0.0.5:5432"),
      pgError("57P03", "the database system is starting up"),
      pgError("55000", 'database "mirror" is not currently accepting connections'),
      new Error("timeout exceeded when trying to connect"),
    ]) {
      const error = connectError(cause, naming);
      expect(error).toBeInstanceOf(DatabaseUnavailableError);
      expect(error).toMatchObject({ code: "DB_UNAVAILABLE", retryable: true, cause });
    }
  });

  it("raises any failure of a statement as a DatabaseError that keeps the driver's error as its cause", () => {
    const cause = pgError("23505", `duplicate key, while connected with ${URL}`);
    const error = storeError(cause, naming);
    expect(error).toBeInstanceOf(DatabaseError);
    expect(error.cause).toBe(cause);
    expect(error.message).toContain("23505");
    expect(error.message).not.toContain(URL);
  });
});
