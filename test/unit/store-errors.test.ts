/**
 * The one error contract's messages: what each dialect's driver error becomes (a DatabaseError that
 * says what to do and keeps the driver's error as its cause), looked up under drizzle's wrapper.
 */
import Database from "better-sqlite3";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { describe, expect, it } from "vitest";
import { DatabaseError, DatabaseRefusedError } from "../../src/errors.js";
import { createNaming, storeError } from "../../src/store/postgres/open.js";
import { isSqliteBusy, notADatabaseError, sqliteStoreError } from "../../src/store/sqlite/sqlite-errors.js";

const RESUMES = /then run again: the mirror resumes where it stopped$/;
const URL = "postgres://mirror:s3cret@db.internal:5432/mirror";
const naming = createNaming(URL, "SYNCMIRROR_DATABASE_URL");
const pgError = (code: string | undefined, message: string) => Object.assign(new Error(message), { code });
const wrapped = (cause: Error) => new DrizzleQueryError("update runs set x = $1", ["value"], cause);

describe("SQLite errors", () => {
  it.each([
    [
      "SQLITE_FULL",
      "database or disk is full",
      /^the disk holding the database is full \(database or disk is full\); free space, then run again/,
    ],
    [
      "SQLITE_IOERR_WRITE",
      "disk I/O error",
      /^the database could not be written \(disk I\/O error\): check that the disk is not full/,
    ],
    [
      "SQLITE_READONLY",
      "attempt to write a readonly database",
      /^the database is read-only \(.*\); make the file and its directory writable by this user$/,
    ],
    [
      "SQLITE_CORRUPT",
      "database disk image is malformed",
      /^database error SQLITE_CORRUPT: database disk image is malformed$/,
    ],
  ])("%s becomes a DatabaseError saying what to do", (code, message, expected) => {
    const cause = new Database.SqliteError(message, code);
    for (const thrown of [cause, wrapped(cause)]) {
      const error = sqliteStoreError(thrown);
      expect(error).toBeInstanceOf(DatabaseError);
      expect(error.message).toMatch(expected);
      expect(error.cause).toBe(thrown);
    }
  });

  it("SQLITE_NOTADB at open is refused like a config error; mid-pass it stays a DatabaseError", () => {
    const cause = new Database.SqliteError("file is not a database", "SQLITE_NOTADB");
    for (const thrown of [cause, wrapped(cause)]) {
      const refused = notADatabaseError("data/mirror.db", thrown);
      expect(refused).toBeInstanceOf(DatabaseRefusedError);
      expect(refused?.message).toBe(
        "database.path: data/mirror.db is not a SQLite database (file is not a database): point database.path at the mirror's database, or move the file away so a new one is created",
      );
      expect(sqliteStoreError(thrown)).toBeInstanceOf(DatabaseError);
    }
    expect(
      notADatabaseError("data/mirror.db", new Database.SqliteError("disk I/O error", "SQLITE_IOERR")),
    ).toBe(undefined);
  });

  it("retries only a busy database (another connection held the write lock)", () => {
    expect(isSqliteBusy(wrapped(new Database.SqliteError("database is locked", "SQLITE_BUSY")))).toBe(true);
    expect(isSqliteBusy(new Database.SqliteError("database or disk is full", "SQLITE_FULL"))).toBe(false);
  });
});

describe("PostgreSQL errors", () => {
  it.each([
    [
      "53100",
      "could not extend file",
      /^the disk holding the PostgreSQL database in \$SYNCMIRROR_DATABASE_URL is full \(53100 could not extend file\); free space on the server, /,
    ],
    [
      "57P01",
      "terminating connection due to administrator command",
      /^lost the connection to the PostgreSQL database in \$SYNCMIRROR_DATABASE_URL \(57P01 terminating connection/,
    ],
    [
      undefined,
      "Connection terminated unexpectedly",
      /^lost the connection to .*: check that the server is up and reachable from here, /,
    ],
    [
      "25006",
      "cannot execute UPDATE in a read-only transaction",
      /^the PostgreSQL database in \$SYNCMIRROR_DATABASE_URL is read-only \(.*\): point \$SYNCMIRROR_DATABASE_URL at the primary server, /,
    ],
  ])("%s (%s) becomes a DatabaseError saying what to do", (code, message, expected) => {
    const cause = pgError(code, message);
    for (const thrown of [cause, wrapped(cause)]) {
      const error = storeError(thrown, naming);
      expect(error).toBeInstanceOf(DatabaseError);
      expect(error.message).toMatch(expected);
      expect(error.message).toMatch(RESUMES);
      expect(error.cause).toBe(thrown);
    }
  });

  it("names the driver's error, not drizzle's statement and parameters, and never the URL", () => {
    const error = storeError(wrapped(pgError("23505", `duplicate key, while connected with ${URL}`)), naming);
    expect(error.message).toBe(
      "the PostgreSQL database in $SYNCMIRROR_DATABASE_URL: 23505 duplicate key, while connected with ***",
    );
  });
});
