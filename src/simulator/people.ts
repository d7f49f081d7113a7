/** The workspace's users: project membership and per-server authentication. */
import type { ServerRecord } from "./dataset.js";

export const AUTH_STATUSES = [
  "authenticated",
  "shared_auth",
  "no_auth_required",
  "not_authenticated",
  "needs_project_admin",
  "needs_tenant_admin",
  "not_syncable",
] as const;
export type AuthStatus = (typeof AUTH_STATUSES)[number];

const ACCESSIBLE: ReadonlySet<AuthStatus> = new Set(["authenticated", "shared_auth", "no_auth_required"]);

export function isAccessible(status: AuthStatus): boolean {
  return ACCESSIBLE.has(status);
}

const DEFAULT_AUTH: Record<ServerRecord["source_type"], AuthStatus> = {
  notion: "authenticated",
  google_drive: "authenticated",
  google_docs: "authenticated",
  github: "shared_auth",
};

export class People {
  private readonly projectUser: boolean[];
  private readonly auth: AuthStatus[][];
  private readonly byEmail: Map<string, number>;

  constructor(
    readonly emails: readonly string[],
    private readonly servers: readonly ServerRecord[],
  ) {
    this.projectUser = emails.map(() => true);
    this.auth = emails.map(() => servers.map((s) => DEFAULT_AUTH[s.source_type]));
    this.byEmail = new Map(emails.map((email, index) => [email.toLowerCase(), index]));
  }

  findIndex(email: string): number | undefined {
    return this.byEmail.get(email.toLowerCase());
  }

  getIndex(email: string): number {
    const index = this.findIndex(email);
    if (index === undefined) throw new Error(`unknown user ${email}`);
    return index;
  }

  isProjectUser(user: number): boolean {
    return this.projectUser[user] === true;
  }

  projectUsers(): number[] {
    return this.emails.flatMap((_, user) => (this.isProjectUser(user) ? [user] : []));
  }

  authOf(user: number, server: number): AuthStatus {
    return this.auth[user]?.[server] ?? "not_authenticated";
  }

  setProjectUser(email: string, member: boolean): void {
    this.projectUser[this.getIndex(email)] = member;
  }

  setAuth(email: string, serverId: string, status: AuthStatus): void {
    if (!AUTH_STATUSES.includes(status)) throw new Error(`unknown auth status ${status}`);
    const server = this.servers.findIndex((s) => s.server_instance_id === serverId);
    if (server < 0) throw new Error(`unknown server ${serverId}`);
    const row = this.auth[this.getIndex(email)];
    if (row) row[server] = status;
  }
}
