// The syncmirror console (docs/console.md). It reads the daemon's JSON endpoints (/status,
// /v1/problems, /v1/passes) and posts its controls (/v1/mirrors/{name}/...) with the bearer token
// the operator enters, kept in sessionStorage (this tab only) and never in a cookie. Whatever the
// server sends is written with textContent: none of it is ever parsed as markup.

const TOKEN_KEY = "syncmirror.httpToken";
const REFRESH_MS = 10_000;
const PAGE = 20;
const MAX_PAGE = 500;
const UNREACHABLE = "the daemon did not answer (is it running, and reachable from this browser?)";
const ENTER_TOKEN = "Enter the value of the variable named by http.token_env (default SYNCMIRROR_HTTP_TOKEN)";
const REFUSED = `The daemon refused this token (401). ${ENTER_TOKEN}; a daemon with no token set refuses every request.`;
const UNSENDABLE = `This token has a character that cannot be sent in an HTTP header (an invisible one, pasted with it?). ${ENTER_TOKEN}.`;
/** What a header value can carry (the browser refuses to send anything else): no control character, nothing past Latin-1. */
const SENDABLE = /^[\x20-\x7e\xa0-\xff]+$/;

const $ = (id) => document.getElementById(id);
const view = {
  shown: PAGE,
  nextBefore: null,
  passes: [],
  loading: null,
  queued: null,
  timer: undefined,
  /** The control being given, whose place keeps the keyboard's focus when the cards are rebuilt. */
  pressed: null,
};
/** Bumped by signOut: an answer to a request made before it is dropped, never shown. */
let signOuts = 0;
/** The reply to the last control given to each mirror, kept across refreshes. */
const replies = new Map();

class Refused extends Error {}

/** An element with attributes (`class`, `data-*`, ...) and children: strings become text nodes. */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined && value !== null && value !== false) node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** A GET or POST of a JSON endpoint with the token; paths are relative, so a proxy's prefix works. */
async function api(path, body) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) throw new Refused();
  const headers = { Authorization: `Bearer ${token}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, {
    method: body === undefined ? "GET" : "POST",
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
    cache: "no-store",
  }).catch(() => {
    // The browser's own words ("Failed to fetch") say nothing of what to check.
    throw new Error(UNREACHABLE);
  });
  if (res.status === 401) throw new Refused();
  const json = await res.json().catch(() => null);
  // /v1/ errors are `{error: {code, message}}` (the CLI's --json failure document).
  if (!res.ok) throw new Error(json?.error?.message ?? `${res.status} ${res.statusText}`);
  return json;
}

function time(iso) {
  if (!iso) return "—";
  return el(
    "time",
    { datetime: iso, title: new Date(iso).toString() },
    `${iso.slice(0, 19).replace("T", " ")} UTC`,
  );
}

/** A pass's length to a tenth of a second while short; `whole` for the lag, to the second. */
function duration(seconds, whole = false) {
  if (seconds === null || seconds === undefined) return "—";
  const s = Math.round(seconds);
  if (s < 60) return seconds < 10 && !whole ? `${seconds.toFixed(1)} s` : `${s} s`;
  const [d, h, m] = [Math.floor(s / 86400), Math.floor((s % 86400) / 3600), Math.floor((s % 3600) / 60)];
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  return `${m} min ${s % 60} s`;
}

/** Time since the mirror's last successful pass, incremental or full. */
function lag(m) {
  const last = [m.last_incremental_success_at, m.last_full_success_at].filter(Boolean).sort().pop();
  return last ? duration(Math.max(0, Date.now() - Date.parse(last)) / 1000, true) : "never succeeded";
}

function stateOf(m) {
  if (m.in_flight) return ["running", `pass in flight (${m.in_flight.mode})`];
  if (m.paused) return ["paused", "paused"];
  if (m.due) return ["due", `${m.due.mode} pass due`];
  if (!m.last_outcome) return ["idle", "never ran"];
  return [m.last_outcome === "succeeded" ? "ok" : "bad", m.last_outcome];
}

function facts(rows) {
  return el(
    "dl",
    { class: "facts" },
    ...rows.flatMap(([term, value]) => [el("dt", {}, term), el("dd", {}, value)]),
  );
}

/** The non-zero entries of a count by status ("2 completed") or by kind ("held sweep: 2"). */
function counted(record, byKind = false) {
  const parts = Object.entries(record ?? {})
    .filter(([, n]) => n > 0)
    .map(([k, n]) => (byKind ? `${k.replaceAll("_", " ")}: ${n}` : `${n} ${k.replaceAll("_", " ")}`));
  return parts.length ? parts.join(", ") : "none";
}

function mirrorCard(m, problems, approvals) {
  const open = problems.counts[m.mirror] ?? {};
  const [kind, label] = stateOf(m);
  const approval = approvals.find((a) => a.mirror === m.mirror);
  const reply = replies.get(m.mirror);
  return el(
    "article",
    { class: "card", "data-mirror": m.mirror },
    el("header", {}, el("h3", {}, m.mirror), el("span", { class: `badge ${kind}` }, label)),
    m.last_message ? el("p", { class: "muted" }, m.last_message) : null,
    facts([
      ["Last outcome", m.last_outcome ? [m.last_outcome, " at ", time(m.last_outcome_at)] : "—"],
      ["Lag", lag(m)],
      ["Live keys", String(m.live_resources)],
      ["Next incremental", m.paused ? "skipped: paused" : time(m.next_incremental_at)],
      ["Next full", m.paused ? "skipped: paused" : time(m.next_full_at)],
      ["Holder", m.holder ?? "none"],
      ["Paused", m.paused ? ["since ", time(m.paused_since), ` by ${m.paused_by}`] : "no"],
      ["Due", m.due ? [`${m.due.mode} (${m.due.reason}) since `, time(m.due.since)] : "nothing"],
      ["Problems", counted(open, true)],
      ["Held revocations", String(m.held_revocations)],
      ["Sweep approval", approval ? `pending: up to ${approval.up_to}, by ${approval.by}` : "none"],
    ]),
    controls(m, (open.held_sweep ?? 0) > 0),
    replyLine(reply),
  );
}

function replyLine(reply) {
  return reply ? el("p", { class: `message ${reply.ok ? "" : "error"}`, role: "status" }, reply.text) : null;
}

/** Shows a control's reply on its card at once: a failed control leaves no refresh to show it. */
function showReply(mirror) {
  const card = [...$("mirrors").querySelectorAll("article.card[data-mirror]")].find(
    (c) => c.dataset.mirror === mirror,
  );
  if (!card) return;
  card.querySelector(":scope > .message")?.remove();
  card.append(replyLine(replies.get(mirror)));
}

/** `data-place` names a button's place on the card: Pause and Resume share one. */
function controls(m, held) {
  const button = (place, action, text, extra = {}) =>
    el(
      "button",
      { type: "button", "data-place": place, "data-action": action, "data-mirror": m.mirror, ...extra },
      text,
    );
  return el(
    "div",
    { class: "buttons" },
    m.paused ? button("pause", "resume", "Resume") : button("pause", "pause", "Pause"),
    button("incremental", "trigger", "Run incremental now", { "data-mode": "incremental" }),
    button("full", "trigger", "Run full now", { "data-mode": "full" }),
    held ? button("approve-sweep", "approve-sweep", "Approve held sweep", { class: "warn" }) : null,
  );
}

/** The card control that has the keyboard's focus (its mirror and place), or null. */
function focusedControl() {
  const b = document.activeElement?.closest?.("#mirrors button[data-place]");
  return b ? { mirror: b.dataset.mirror, place: b.dataset.place } : null;
}

/**
 * Puts the focus back on the control in that place of that mirror's card, once the cards are rebuilt
 * (every refresh rebuilds them): a keyboard user stays where they were instead of at the page's top.
 */
function refocus(control) {
  if (!control) return;
  const b = [...document.querySelectorAll("#mirrors button[data-place]")].find(
    (x) => x.dataset.mirror === control.mirror && x.dataset.place === control.place,
  );
  b?.focus();
}

/** Nothing of the page has the focus (a rebuilt card took it away). */
const focusLost = () => document.activeElement === null || document.activeElement === document.body;

function problemsTable(problems) {
  if (problems.problems.length === 0) return el("p", { class: "muted" }, "No open problems.");
  const concerns = (p) =>
    [
      p.user_email,
      p.key && `key ${p.key}`,
      p.source && `source ${p.source}`,
      p.server_instance_id && `server ${p.server_instance_id}`,
      p.sync_id && `run ${p.sync_id}`,
    ]
      .filter(Boolean)
      .join(", ") || "the mirror";
  const head = ["Mirror", "Kind", "Concerns", "Reason", "Count", "First seen", "Last seen"];
  return [
    el(
      "div",
      { class: "scroll" },
      el(
        "table",
        {},
        el("thead", {}, el("tr", {}, ...head.map((h) => el("th", { scope: "col" }, h)))),
        el(
          "tbody",
          {},
          ...problems.problems.map((p) =>
            el(
              "tr",
              { "data-kind": p.kind },
              el("td", {}, p.mirror),
              el("td", {}, p.kind.replaceAll("_", " ")),
              el("td", { class: "wrap" }, concerns(p)),
              el("td", { class: "wrap" }, p.reason),
              el("td", {}, p.count === null ? "" : String(p.count)),
              el("td", {}, time(p.first_seen_at)),
              el("td", {}, time(p.last_seen_at)),
            ),
          ),
        ),
      ),
    ),
    problems.truncated
      ? el("p", { class: "muted" }, "More problems are open: see `syncmirror problems`.")
      : null,
  ];
}

function passEntry(p) {
  const outcome = p.state === "in_flight" ? "in flight" : (p.outcome ?? "—");
  const c = p.counts;
  const flags = [p.dry_run && "dry run", p.resumed && "resumed", p.adopted && "runs adopted"].filter(Boolean);
  return el(
    "article",
    { class: "pass", "data-pass": p.id },
    el(
      "header",
      {},
      el("h3", {}, `#${p.id} ${p.mirror} ${p.mode}${flags.length ? ` (${flags.join(", ")})` : ""}`),
      el(
        "span",
        { class: `badge ${p.outcome === "succeeded" ? "ok" : p.outcome ? "bad" : "running"}` },
        outcome,
      ),
    ),
    el(
      "p",
      { class: "muted" },
      "started ",
      time(p.started_at),
      ", ",
      p.ended_at ? ["ended ", time(p.ended_at), ` (${duration(p.duration_seconds)})`] : "not ended",
      p.replica?.name ? ` on ${p.replica.name}` : "",
      p.finished_by && p.finished_by.instance_id !== p.replica?.instance_id
        ? `, finished on ${p.finished_by.name}`
        : "",
    ),
    el(
      "p",
      { class: "muted" },
      p.trigger_id ? `trigger ${p.trigger_id}` : "trigger not sent yet",
      ", ",
      p.since ? ["since ", time(p.since)] : "no since (full)",
    ),
    p.message ? el("p", {}, p.message) : null,
    el(
      "p",
      { class: "counts" },
      `keys ${p.keys.new} new, ${p.keys.changed} changed, ${p.keys.unchanged ?? "?"} unchanged; `,
      `rows ${c.upserted} upserted, ${c.unchanged} unchanged, ${c.rejected} rejected; ${c.deleted} deleted, ${c.revoked} revoked, ${c.held} held; `,
      `runs: ${counted(p.runs)}; sources: ${counted(p.sources)}; skipped pairs: ${counted(p.skipped)}`,
    ),
    p.sweep_approval
      ? el(
          "p",
          {},
          `Approved sweep (${p.sweep_approval.by}): ${p.sweep_approval.used} of up to ${p.sweep_approval.up_to} revocations applied`,
        )
      : null,
    p.errors.length
      ? el(
          "ul",
          { class: "errors" },
          ...p.errors.map((e) =>
            el(
              "li",
              {},
              time(e.at),
              " ",
              [e.user_email, e.source, e.sync_id && `run ${e.sync_id}`].filter(Boolean).join(" · "),
              e.replica ? ` on ${e.replica}` : "",
              el("span", { class: "error-text" }, e.error),
            ),
          ),
        )
      : null,
  );
}

/**
 * A mirror the database knows and the config no longer names: no pass runs for it, so nothing
 * sweeps the access it still grants. Only the CLI's `forget` (under the mirror's lease) revokes it;
 * the page says what to run and offers no control.
 */
function retiredCard(r) {
  const grants =
    r.keys === 0
      ? "It grants no access; its state is still kept."
      : `It still grants ${r.users} user(s) access to ${r.keys} key(s), and no pass runs for it.`;
  return el(
    "article",
    { class: "card", "data-retired": r.mirror },
    el("header", {}, el("h3", {}, r.mirror), el("span", { class: "badge bad" }, "not in the config")),
    el("p", {}, grants),
    el(
      "p",
      { class: "muted" },
      "Run ",
      el("code", {}, `syncmirror forget --mirror ${r.mirror}`),
      " to revoke it, or put the mirror back in the config.",
    ),
  );
}

/** The daemons alive on the database (by heartbeat): who will take a pass asked for now. */
function replicasLine(replicas) {
  if (!replicas?.length) return "No daemon alive: a pass asked for here waits for one.";
  return `Daemons alive: ${replicas.map((r) => `${r.name} (${r.running} of ${r.slots} slots busy)`).join(", ")}`;
}

function render(status, problems, history) {
  const approvals = problems.pending_sweep_approvals;
  const focus = focusedControl() ?? (focusLost() ? view.pressed : null);
  $("replicas").textContent = replicasLine(status.replicas);
  $("mirrors").replaceChildren(
    ...status.mirrors.map((m) => mirrorCard(m, problems, approvals)),
    ...status.retired_mirrors.map(retiredCard),
  );
  refocus(focus);
  $("problems").replaceChildren(...[problemsTable(problems)].flat().filter(Boolean));
  view.passes = history.passes;
  view.nextBefore = history.next_before;
  $("passes").replaceChildren(
    ...(view.passes.length ? view.passes.map(passEntry) : [el("p", { class: "muted" }, "No passes yet.")]),
  );
  $("older").hidden = view.nextBefore === null;
  $("refreshed").textContent = `updated ${new Date().toLocaleTimeString()}`;
}

function notice(text) {
  $("notice").textContent = text ?? "";
  $("notice").hidden = !text;
}

/**
 * Reads and renders everything. A call while a read is under way waits for it and reads once more
 * after it (a control's effect is never left to the next refresh); several such calls share that read.
 */
function load() {
  if (view.loading === null) {
    view.loading = read().finally(() => {
      view.loading = null;
    });
    return view.loading;
  }
  view.queued ??= view.loading.then(() => {
    view.queued = null;
    return load();
  });
  return view.queued;
}

async function read() {
  const asked = signOuts;
  try {
    const limit = Math.min(MAX_PAGE, Math.max(PAGE, view.shown));
    const [status, problems, history] = await Promise.all([
      api("status"),
      api("v1/problems"),
      api(`v1/passes?limit=${limit}`),
    ]);
    if (asked !== signOuts) return;
    notice(null);
    render(status, problems, history);
    showConsole();
  } catch (error) {
    if (asked === signOuts) failed(error);
  }
}

function failed(error) {
  if (error instanceof Refused) signOut(REFUSED);
  else notice(`Could not read the daemon: ${error.message}`);
}

function showConsole() {
  $("login").hidden = true;
  $("console").hidden = false;
  $("session").hidden = false;
}

/** Loads now and every REFRESH_MS while the tab is visible, until signOut: a daemon still starting (503) or out of reach is tried again. */
function start() {
  clearInterval(view.timer);
  view.timer = setInterval(() => {
    if (!document.hidden) void load();
  }, REFRESH_MS);
  void load();
}

/** Forgets the token and every piece of data on the page, and asks again. */
function signOut(message) {
  signOuts += 1;
  sessionStorage.removeItem(TOKEN_KEY);
  clearInterval(view.timer);
  replies.clear();
  Object.assign(view, { shown: PAGE, nextBefore: null, passes: [] });
  for (const id of ["replicas", "mirrors", "problems", "passes"]) $(id).replaceChildren();
  $("refreshed").textContent = "";
  notice(null);
  $("console").hidden = true;
  $("session").hidden = true;
  $("login").hidden = false;
  $("login-message").textContent = message ?? "";
  $("token").value = "";
  $("token").focus();
}

async function control(button) {
  const { action, mirror, mode } = button.dataset;
  if (
    action === "approve-sweep" &&
    !window.confirm(
      `Let the next full pass of ${mirror} apply the sweeps the mass-delete guard held? Check upstream first that those documents are really gone.`,
    )
  )
    return;
  view.pressed = focusedControl();
  for (const b of document.querySelectorAll("button[data-action]")) b.disabled = true;
  const asked = signOuts;
  try {
    const reply = await api(`v1/mirrors/${encodeURIComponent(mirror)}/${action}`, mode ? { mode } : {});
    if (asked === signOuts) replies.set(mirror, { ok: true, text: reply.message });
  } catch (error) {
    if (asked !== signOuts) return;
    if (error instanceof Refused) return signOut(REFUSED);
    replies.set(mirror, { ok: false, text: `${action} failed: ${error.message}` });
    showReply(mirror);
  }
  await load();
  // Shown by the reload, unless it failed (the daemon gone meanwhile).
  showReply(mirror);
  // When the reload failed the old buttons are still there.
  for (const b of document.querySelectorAll("button[data-action]")) b.disabled = false;
  if (focusLost()) refocus(view.pressed);
  view.pressed = null;
}

async function older() {
  const asked = signOuts;
  try {
    const history = await api(`v1/passes?limit=${PAGE}&before=${view.nextBefore}`);
    if (asked !== signOuts) return;
    view.passes.push(...history.passes);
    view.shown = view.passes.length;
    view.nextBefore = history.next_before;
    $("passes").append(...history.passes.map(passEntry));
    $("older").hidden = view.nextBefore === null;
  } catch (error) {
    if (asked === signOuts) failed(error);
  }
}

$("login").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("token").value.trim();
  if (!token) return;
  if (!SENDABLE.test(token)) {
    $("login-message").textContent = UNSENDABLE;
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  $("token").value = "";
  $("login-message").textContent = "";
  start();
});
$("mirrors").addEventListener("click", (event) => {
  const button = event.target.closest("button[data-action]");
  if (button) void control(button);
});
$("refresh").addEventListener("click", () => void load());
$("forget").addEventListener("click", () => signOut("Token forgotten."));
$("older").addEventListener("click", () => void older());

if (sessionStorage.getItem(TOKEN_KEY)) start();
else signOut();
