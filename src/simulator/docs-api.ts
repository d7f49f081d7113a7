/** `sim.docs`: dataset mutations; they show in runs whose source finishes afterwards. */
import { type DocInfo, type DocOverride, findDocIndex } from "./dataset.js";
import type { SimState } from "./state.js";
import { parseIsoDate } from "./trigger.js";

export interface AddDocOptions {
  server_instance_id: string;
  visibleTo: string[];
  /** ISO time; null for "no modified time"; default: the simulator clock (which then ticks). */
  modifiedAt?: string | null;
  contentBytes?: number;
  title?: string;
  content?: string;
  fields?: unknown;
  type?: string;
}

export interface EditDocOptions {
  title?: string;
  /** Exact new text; default: freshly generated text. */
  content?: string;
  contentBytes?: number;
  fields?: unknown;
  /** As for `add`; default: the simulator clock. */
  modifiedAt?: string | null;
}

export interface SimulatorDocs {
  /** Every document, deleted ones included (deleted: true). Builds 1 object per document: small sets only. */
  list(): DocInfo[];
  get(docId: string): DocInfo;
  /** New version: new content (so a new content_hash), modified_at = clock (or `modifiedAt`). */
  edit(docId: string, options?: EditDocOptions): void;
  /** Adds a document; returns its docId. */
  add(options: AddDocOptions): string;
  /** Deleted upstream: no later snapshot collects it. */
  remove(docId: string): void;
  /** Replaces who can see the document (emails of workspace users). */
  setVisibility(docId: string, users: string[]): void;
}

export function createDocsApi(state: SimState): SimulatorDocs {
  const { dataset, people } = state;
  const indexOf = (docId: string) => {
    const index = findDocIndex(dataset, docId);
    if (index === undefined) throw new Error(`unknown document ${docId}`);
    return index;
  };
  const modifiedAtOf = (value: string | null | undefined) => {
    if (value === undefined) return state.clock.tick();
    if (value === null) return Number.NaN;
    const ms = parseIsoDate(value);
    if (Number.isNaN(ms)) throw new Error(`modifiedAt is not an ISO 8601 time: ${value}`);
    return ms;
  };
  const usersOf = (emails: readonly string[]) => emails.map((email) => people.getIndex(email));
  return {
    list: () => Array.from({ length: dataset.count }, (_, index) => dataset.info(index)),
    get: (docId) => dataset.info(indexOf(docId)),
    edit(docId, options = {}) {
      const index = indexOf(docId);
      if (dataset.deleted[index] === 1) throw new Error(`document ${docId} is deleted`);
      dataset.version[index] = (dataset.version[index] ?? 1) + 1;
      dataset.modifiedAt[index] = modifiedAtOf(options.modifiedAt);
      const { modifiedAt: _ignored, ...pins } = options;
      if (Object.keys(pins).length > 0) dataset.pin(index, pins);
    },
    add(options) {
      const server = state.serverById(options.server_instance_id);
      if (!server) throw new Error(`unknown server ${options.server_instance_id}`);
      const pin: DocOverride = {};
      if (options.title !== undefined) pin.title = options.title;
      if (options.content !== undefined) pin.content = options.content;
      if (options.contentBytes !== undefined) pin.contentBytes = options.contentBytes;
      if (options.fields !== undefined) pin.fields = options.fields;
      if (options.type !== undefined) pin.type = options.type;
      const index = dataset.insert(
        server.index,
        modifiedAtOf(options.modifiedAt),
        usersOf(options.visibleTo),
        pin,
      );
      return dataset.info(index).docId;
    },
    remove(docId) {
      dataset.deleted[indexOf(docId)] = 1;
    },
    setVisibility(docId, users) {
      dataset.setVisibleUsers(indexOf(docId), usersOf(users));
    },
  };
}
