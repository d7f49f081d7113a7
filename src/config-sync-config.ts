/**
 * `mirrors[].sync_config` (docs/declared-sync-configs.md): a mirror may declare the upstream sync
 * config it mirrors instead of naming its id. Only the shape is checked here; the names of servers
 * and the project are resolved against the service by `plan` / `apply` (`sync-configs/resolve.ts`).
 */
import { z } from "zod";

/** The service's limits (docs/reference/upstream-api.md#limits-and-retries): checked here so a typo fails before any request. */
const MAX_SERVERS = 10;
const MAX_INSTRUCTIONS_CHARS = 50_000;

export const SyncConfigSection = z
  .strictObject({
    name: z
      .string()
      .trim()
      .min(1, "must not be empty")
      .meta({
        description: "Name of the sync config upstream (unique in its project).",
        examples: ["Sales drive"],
      }),
    instructions: z
      .string()
      .min(1, "must not be empty")
      .max(MAX_INSTRUCTIONS_CHARS)
      .meta({
        description: "What the service's agent collects, in plain words (at most 50,000 characters).",
        examples: ["Collect the team's shared proposals and contracts."],
      }),
    servers: z
      .array(z.string().trim().min(1, "must not be empty"))
      .min(1, "list at least one server")
      .max(MAX_SERVERS, `the service takes at most ${MAX_SERVERS} servers per sync config`)
      .meta({
        description:
          "Servers to collect from (1 to 10), by server name, display name or server_instance_id; `syncmirror plan` lists the candidates.",
        examples: [["Google Drive"]],
      }),
    users: z
      .array(z.email("must be an email address"))
      .min(1, "list at least one user")
      .optional()
      .meta({
        description: "Users whose access is collected; give exactly one of `users` and `all_users`.",
        examples: [["ana@example.com", "bo@example.com"]],
      }),
    // `false` beside `users` is the service's own body shape, so a file written from it loads.
    all_users: z
      .boolean()
      .optional()
      .meta({
        description: "Every user of the project (`true`), instead of `users`; `false` only beside `users`.",
        examples: [true],
      }),
    /** Project id or name; default: the only project the token sees. */
    project: z
      .string()
      .trim()
      .min(1)
      .optional()
      .meta({
        description: "Project id or name; needed only when the token sees more than one project.",
        examples: ["Acme"],
      }),
  })
  .describe(
    "The upstream sync config, declared here instead of `sync_config_id`: `syncmirror plan` shows and `syncmirror apply` makes the changes upstream.",
  )
  .superRefine((s, ctx) => {
    if ((s.users === undefined) === (s.all_users !== true)) {
      ctx.addIssue({
        code: "custom",
        path: [],
        message: "give exactly one of `users: [...]` and `all_users: true`",
      });
    }
    const seen = new Map<string, number>();
    s.users?.forEach((email, i) => {
      const first = seen.get(email.toLowerCase());
      if (first !== undefined)
        ctx.addIssue({ code: "custom", path: ["users", i], message: `repeats users[${first}]` });
      else seen.set(email.toLowerCase(), i);
    });
  });

/** A mirror's local name (CLI, metrics labels, database), and the config it names or declares. */
export const MIRROR_IDENTITY = {
  name: z
    .string()
    .regex(/^[a-z0-9_-]+$/, "must match [a-z0-9_-]+ (it is used in metrics and the database)")
    .meta({
      description:
        "Local name of the mirror: unique, `[a-z0-9_-]+`; used in the CLI, metrics labels and the database.",
      examples: ["eng-wiki"],
    }),
  sync_config_id: z
    .string()
    .min(1)
    .optional()
    .meta({
      description:
        "Id of an upstream sync config made elsewhere, to trigger and export. Give exactly one of `sync_config_id` and `sync_config`; two mirrors may not name the same one. Naming another one later makes the mirror's next pass a full snapshot.",
      examples: ["3f6c2a91-8d4e-4b7a-9c15-2e8f0d6b1a47"],
    }),
  sync_config: SyncConfigSection.optional(),
};

export const ONE_SOURCE = [
  (m: { sync_config_id?: unknown; sync_config?: unknown }) =>
    (m.sync_config_id === undefined) !== (m.sync_config === undefined),
  { message: "give exactly one of sync_config_id (a config made elsewhere) and sync_config (declared here)" },
] as const;

/** A declared sync config as the file says it (servers still by name). */
export interface DeclaredSyncConfig {
  readonly name: string;
  readonly instructions: string;
  /** Server names, display names or ids, as written. */
  readonly servers: readonly string[];
  /** Null with `allUsers`. */
  readonly users: readonly string[] | null;
  readonly allUsers: boolean;
  /** Project id or name; null: the only project the token sees. */
  readonly project: string | null;
  /** Where the mirror sits in the file (`mirrors[2]`), for messages naming keys. */
  readonly mirrorIndex: number;
}

export function freezeSyncConfig(
  s: z.infer<typeof SyncConfigSection>,
  mirrorIndex: number,
): DeclaredSyncConfig {
  return Object.freeze({
    name: s.name,
    instructions: s.instructions,
    servers: Object.freeze([...s.servers]),
    users: s.users ? Object.freeze([...s.users]) : null,
    allUsers: s.all_users === true,
    project: s.project ?? null,
    mirrorIndex,
  });
}

/** `mirrors[1].sync_config.servers[0]`: the key a message about a declared config names. */
export function declaredKey(
  d: Pick<DeclaredSyncConfig, "mirrorIndex">,
  ...rest: (string | number)[]
): string {
  return `mirrors[${d.mirrorIndex}].sync_config${rest.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join("")}`;
}

interface MirrorIdentity {
  name: string;
  sync_config_id?: string | undefined;
  sync_config?: { name: string; project?: string | undefined } | undefined;
}

/**
 * Mirror names are unique, and so is what each mirrors: two mirrors of one config would trigger
 * it twice and each adopt the other's runs. A declared name is one config per project;
 * `sync-configs/bind.ts` checks the ids declared configs resolve to.
 */
export function checkMirrorIdentities(mirrors: readonly MirrorIdentity[], ctx: z.RefinementCtx): void {
  const names = new Set<string>();
  const byConfig = new Map<string, string>();
  mirrors.forEach((m, i) => {
    if (names.has(m.name))
      ctx.addIssue({ code: "custom", path: [i, "name"], message: `duplicate mirror name "${m.name}"` });
    names.add(m.name);
    const declared = m.sync_config;
    const key = declared ? `declared\n${declared.project ?? ""}\n${declared.name}` : (m.sync_config_id ?? "");
    const other = byConfig.get(key);
    if (other === undefined) {
      byConfig.set(key, m.name);
      return;
    }
    ctx.addIssue({
      code: "custom",
      path: declared ? [i, "sync_config", "name"] : [i, "sync_config_id"],
      message: bothMirror(
        other,
        m.name,
        declared ? `the sync config named "${declared.name}"` : `sync config ${m.sync_config_id}`,
      ),
    });
  });
}

/** Why two mirrors may not mirror one config, as the file's check and `plan` say it. */
export function bothMirror(first: string, second: string, config: string): string {
  return `mirrors "${first}" and "${second}" both mirror ${config}; one trigger per sync config at a time: keep one of them`;
}
