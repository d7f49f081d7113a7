/**
 * The workspace's documents, kept small: per document only its server, version, modified time,
 * deleted flag and a visibility bitmask live in typed arrays. Everything else (native id, type,
 * title, content, fields) is derived from (seed, index, version) when needed, so 100k+ documents
 * cost a few MB.
 */
import { formatZuluIso } from "./clock.js";
import { hash32, randomFor, randomHex } from "./random.js";
import { generateTitle } from "./text.js";

export type SourceType = "notion" | "google_drive" | "google_docs" | "github";
export const SOURCE_TYPES: readonly SourceType[] = ["notion", "google_drive", "google_docs", "github"];

export interface ServerRecord {
  server_instance_id: string;
  server_name: string;
  display_name: string;
  source_type: SourceType;
  index: number;
}

/** What a test may pin on a document it adds or edits; the rest is generated. */
export interface DocOverride {
  title?: string;
  content?: string;
  contentBytes?: number;
  fields?: unknown;
  type?: string;
}

/** The pins in force at one version; `contentVersion` is the version whose content was pinned. */
export interface PinnedDoc extends DocOverride {
  contentVersion?: number;
}

/** A document as tests see it. `modifiedAt` is ISO (`...Z`) or null. */
export interface DocInfo {
  docId: string;
  key: string;
  native_id: string;
  server_instance_id: string;
  type: string;
  title: string;
  version: number;
  visibleTo: string[];
  modifiedAt: string | null;
  deleted: boolean;
}

const TYPES: Record<SourceType, readonly (readonly [string, number])[]> = {
  notion: [
    ["page", 0.7],
    ["database", 0.15],
    ["data_source", 0.15],
  ],
  google_drive: [
    ["document", 0.5],
    ["spreadsheet", 0.25],
    ["file", 0.25],
  ],
  google_docs: [
    ["document", 0.7],
    ["spreadsheet", 0.15],
    ["file", 0.15],
  ],
  github: [
    ["issue", 0.65],
    ["pull_request", 0.35],
  ],
};
const REPOS = ["acme/platform", "acme/web", "acme/infra"];
const DRIVE_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-";

export class Dataset {
  count = 0;
  serverOf = new Uint16Array(0);
  version = new Uint32Array(0);
  /** Epoch ms; NaN when the document has no modified time. */
  modifiedAt = new Float64Array(0);
  deleted = new Uint8Array(0);
  private visibility = new Uint32Array(0);
  private readonly words: number;
  /** Pins per document, oldest first, each from the version it was set at. */
  private readonly pins = new Map<number, { version: number; pin: DocOverride }[]>();
  /** Per server: document indexes sorted by native id (hence by key). */
  private readonly byServer: number[][];

  constructor(
    readonly seed: number,
    readonly servers: readonly ServerRecord[],
    readonly users: readonly string[],
  ) {
    this.words = Math.max(1, Math.ceil(users.length / 32));
    this.byServer = servers.map(() => []);
  }

  /** Appends a document without keeping the server's key order; call `sortAll()` after bulk loads. */
  append(server: number, modifiedAtMs: number, visibleTo: readonly number[]): number {
    this.reserve(this.count + 1);
    const index = this.count++;
    this.serverOf[index] = server;
    this.version[index] = 1;
    this.modifiedAt[index] = modifiedAtMs;
    this.setVisibleUsers(index, visibleTo);
    this.byServer[server]?.push(index);
    return index;
  }

  /** Adds one document and keeps its server's key order. */
  insert(server: number, modifiedAtMs: number, visibleTo: readonly number[], override: DocOverride): number {
    this.reserve(this.count + 1);
    const index = this.count++;
    this.serverOf[index] = server;
    this.version[index] = 1;
    this.modifiedAt[index] = modifiedAtMs;
    this.setVisibleUsers(index, visibleTo);
    this.pin(index, override);
    const list = this.byServer[server] ?? [];
    const id = this.nativeId(index);
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.nativeId(list[mid] ?? 0) < id) lo = mid + 1;
      else hi = mid;
    }
    list.splice(lo, 0, index);
    return index;
  }

  sortAll(): void {
    for (const list of this.byServer) {
      const keyed = list.map((index) => ({ id: this.nativeId(index), index }));
      keyed.sort((a, b) => compare(a.id, b.id));
      for (let i = 0; i < keyed.length; i++) list[i] = keyed[i]?.index ?? 0;
    }
  }

  /** Document indexes of one server, in key order (live array: do not mutate). */
  serverDocs(server: number): readonly number[] {
    return this.byServer[server] ?? [];
  }

  isVisible(index: number, user: number): boolean {
    const word = this.visibility[index * this.words + (user >>> 5)] ?? 0;
    return ((word >>> (user & 31)) & 1) === 1;
  }

  setVisibleUsers(index: number, users: readonly number[]): void {
    const base = index * this.words;
    this.visibility.fill(0, base, base + this.words);
    for (const user of users) {
      const at = base + (user >>> 5);
      this.visibility[at] = ((this.visibility[at] ?? 0) | (1 << (user & 31))) >>> 0;
    }
  }

  /** Pins `override` from the document's current version on. */
  pin(index: number, override: DocOverride): void {
    const list = this.pins.get(index) ?? [];
    list.push({ version: this.version[index] ?? 1, pin: override });
    this.pins.set(index, list);
  }

  /** The pins in force at `version` (latest wins), or undefined for a wholly generated document. */
  pinned(index: number, version: number): PinnedDoc | undefined {
    const list = this.pins.get(index);
    if (!list) return undefined;
    let merged: PinnedDoc | undefined;
    for (const { version: from, pin } of list) {
      if (from > version) break;
      merged = { ...merged, ...pin };
      if (pin.content !== undefined) merged.contentVersion = from;
    }
    return merged;
  }

  server(index: number): ServerRecord {
    const server = this.servers[this.serverOf[index] ?? 0];
    if (!server) throw new RangeError(`document ${index} has no server`);
    return server;
  }

  nativeId(index: number): string {
    const type = this.server(index).source_type;
    const random = randomFor(this.seed, "native", index);
    if (type === "notion") return randomHex(random, 32);
    if (type === "github") return `${random.pick(REPOS)}#${1000 + index}`;
    let id = "1";
    for (let i = 0; i < 32; i++) id += DRIVE_ALPHABET[random.uint32() & 63];
    return id;
  }

  key(index: number): string {
    const server = this.server(index);
    return `${server.source_type}:${server.server_instance_id}:${this.nativeId(index)}`;
  }

  type(index: number): string {
    const pinned = this.pinned(index, Number.MAX_SAFE_INTEGER)?.type;
    if (pinned) return pinned;
    const weights = TYPES[this.server(index).source_type];
    let roll = hash32(this.seed, "type", index) / 4294967296;
    for (const [type, weight] of weights) {
      roll -= weight;
      if (roll < 0) return type;
    }
    return weights[0]?.[0] ?? "page";
  }

  title(index: number, version = Number.MAX_SAFE_INTEGER): string {
    return (
      this.pinned(index, version)?.title ??
      generateTitle(this.type(index), randomFor(this.seed, "title", index))
    );
  }

  info(index: number): DocInfo {
    const modifiedAt = this.modifiedAt[index] ?? Number.NaN;
    return {
      docId: docIdOf(index),
      key: this.key(index),
      native_id: this.nativeId(index),
      server_instance_id: this.server(index).server_instance_id,
      type: this.type(index),
      title: this.title(index),
      version: this.version[index] ?? 1,
      visibleTo: this.users.filter((_, user) => this.isVisible(index, user)),
      modifiedAt: Number.isNaN(modifiedAt) ? null : formatZuluIso(modifiedAt),
      deleted: this.deleted[index] === 1,
    };
  }

  private reserve(needed: number): void {
    if (needed <= this.version.length) return;
    const capacity = Math.max(64, needed, this.version.length * 2);
    this.serverOf = grow(this.serverOf, new Uint16Array(capacity));
    this.version = grow(this.version, new Uint32Array(capacity));
    this.modifiedAt = grow(this.modifiedAt, new Float64Array(capacity));
    this.deleted = grow(this.deleted, new Uint8Array(capacity));
    this.visibility = grow(this.visibility, new Uint32Array(capacity * this.words));
  }
}

function grow<T extends Uint8Array | Uint16Array | Uint32Array | Float64Array>(from: T, to: T): T {
  to.set(from as never);
  return to;
}

/** Plain code-unit order, as a sort of keys by `<` would give (not locale order). */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function docIdOf(index: number): string {
  return `doc-${index}`;
}

/** The document index behind a `doc-N` id, or undefined. */
export function findDocIndex(dataset: Dataset, docId: string): number | undefined {
  const match = /^doc-(\d+)$/.exec(docId);
  const index = match ? Number(match[1]) : Number.NaN;
  return Number.isInteger(index) && index < dataset.count ? index : undefined;
}
