/** Builds the seeded workspace: servers, users and documents, all from one PRNG seed. */
import { Dataset, type ServerRecord, SOURCE_TYPES, type SourceType } from "./dataset.js";
import { People } from "./people.js";
import { createRandom, hash32, type Random, randomUuid } from "./random.js";

export interface SeedOptions {
  seed: number;
  users: number;
  serversPerType: Partial<Record<SourceType, number>>;
  docs: number;
  startMs: number;
}

export interface Workspace {
  dataset: Dataset;
  people: People;
  /** Draws every id the service hands out later (configs, triggers, runs, tasks). */
  ids: Random;
}

const SERVER_NAMES: Record<SourceType, readonly string[]> = {
  notion: ["Team Wiki", "Eng Docs", "Product Specs", "Sales Playbook"],
  google_drive: ["Google Drive", "Shared Drive", "Finance Drive"],
  google_docs: ["Google Docs", "Docs Archive", "Policy Docs"],
  github: ["GitHub", "GitHub Enterprise", "GitHub Labs"],
};
const DAY_MS = 86_400_000;

export function seedWorkspace(options: SeedOptions): Workspace {
  const ids = createRandom(hash32(options.seed, "ids"));
  const servers = createServers(options.serversPerType, ids);
  const emails = Array.from({ length: options.users }, (_, i) => `user${i + 1}@example.com`);
  const dataset = new Dataset(options.seed, servers, emails);
  const random = createRandom(hash32(options.seed, "docs"));
  for (let i = 0; i < options.docs; i++) {
    const modifiedAt = random.chance(0.05)
      ? Number.NaN
      : Math.floor((options.startMs - random.next() * 90 * DAY_MS) / 1000) * 1000;
    dataset.append(i % servers.length, modifiedAt, pickVisibleUsers(random, emails.length));
  }
  dataset.sortAll();
  return { dataset, people: new People(emails, servers), ids };
}

function createServers(perType: Partial<Record<SourceType, number>>, ids: Random): ServerRecord[] {
  const servers: ServerRecord[] = [];
  for (const type of SOURCE_TYPES) {
    const count = perType[type] ?? 0;
    if (!Number.isInteger(count) || count < 0) throw new RangeError(`serversPerType.${type} must be >= 0`);
    const names = SERVER_NAMES[type];
    for (let n = 0; n < count; n++) {
      const name = names[n] ?? `${names[0]} ${n + 1}`;
      servers.push({
        server_instance_id: randomUuid(ids),
        server_name: name,
        display_name: name,
        source_type: type,
        index: servers.length,
      });
    }
  }
  if (servers.length === 0) throw new RangeError("the simulator needs at least one server");
  if (servers.length > 0xffff) throw new RangeError("too many servers");
  return servers;
}

/** Each user sees a document with probability 0.6; nobody-sees-it is replaced by one random user. */
function pickVisibleUsers(random: Random, users: number): number[] {
  const visible: number[] = [];
  for (let user = 0; user < users; user++) if (random.chance(0.6)) visible.push(user);
  if (visible.length === 0 && users > 0) visible.push(random.int(0, users));
  return visible;
}
