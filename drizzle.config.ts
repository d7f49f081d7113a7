import { defineConfig } from "drizzle-kit";

/** `npm run db:generate` writes the migrations of both dialects from their drizzle schemas. */
const dialect = process.env.DRIZZLE_DIALECT === "postgresql" ? "postgresql" : "sqlite";

export default defineConfig(
  dialect === "sqlite"
    ? { dialect, schema: "./src/store/sqlite/schema.ts", out: "./migrations/sqlite" }
    : {
        dialect,
        schema: "./src/store/postgres/schema.ts",
        out: "./migrations/postgres",
        // PostgreSQL runs a migration's statements as one query: one round trip each, not one per
        // statement, for a replica starting on a fresh database across a network.
        breakpoints: false,
      },
);
