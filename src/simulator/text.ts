/** Plausible words for generated titles and bodies. Deterministic given the `Random` passed in. */
import { createRandom, type Random } from "./random.js";

const WORDS = (
  "the a of to and in for on with by from as is are was be this that it its we our team service " +
  "deploy release review design api client server cache queue worker retry timeout index search " +
  "policy owner budget forecast quarter roadmap customer incident postmortem runbook escalation " +
  "latency error rate migration schema database backup restore access token rotation audit " +
  "onboarding handbook checklist meeting notes decision proposal draft final summary action item " +
  "metric dashboard alert threshold capacity scaling region cluster network storage billing " +
  "invoice contract vendor security compliance privacy retention support ticket feedback launch"
).split(" ");

const TOPICS = [
  "Payments",
  "Search",
  "Onboarding",
  "Billing",
  "Platform",
  "Security",
  "Data pipeline",
  "Mobile app",
  "Support",
  "Growth",
  "Infra",
  "Hiring",
];
const NOUN_BY_TYPE: Record<string, readonly string[]> = {
  page: ["handbook", "runbook", "meeting notes", "design doc", "retro", "FAQ", "onboarding guide"],
  database: ["tracker", "roadmap", "task board", "CRM", "directory"],
  data_source: ["view", "table", "feed"],
  document: ["proposal", "brief", "memo", "spec", "minutes", "report"],
  spreadsheet: ["budget", "forecast", "headcount plan", "OKR sheet", "pricing model"],
  file: ["contract.pdf", "diagram.png", "export.csv", "slides.pptx", "logo.svg"],
  issue: ["fails on retry", "times out under load", "returns 500 on empty input", "leaks memory"],
  pull_request: ["add retries", "speed up indexing", "fix flaky test", "bump dependencies"],
};

export function generateTitle(type: string, random: Random): string {
  const topic = random.pick(TOPICS);
  const noun = random.pick(NOUN_BY_TYPE[type] ?? NOUN_BY_TYPE.page ?? ["notes"]);
  if (type === "issue") return `${topic}: ${noun}`;
  if (type === "pull_request") return `${topic}: ${noun}`;
  if (type === "spreadsheet") return `${topic} ${noun} ${2024 + random.int(0, 3)}`;
  return `${topic} ${noun}`;
}

/** A sentence of 6 to 18 words, capitalised, with a full stop. */
export function generateSentence(random: Random): string {
  const count = random.int(6, 19);
  const first = random.pick(WORDS);
  let text = `${first.charAt(0).toUpperCase()}${first.slice(1)}`;
  for (let i = 1; i < count; i++) text += ` ${random.pick(WORDS)}`;
  return `${text}.`;
}

const CORPUS_CHARS = 512 * 1024;
let corpus: string | undefined;

/** Half a MB of fixed markdown (paragraphs and lists), built once from a fixed seed. */
function getCorpus(): string {
  if (corpus) return corpus;
  const random = createRandom(0x5e17e);
  const paragraphs: string[] = [];
  let length = 0;
  while (length < CORPUS_CHARS) {
    const list = random.chance(0.15);
    const lines: string[] = [];
    for (let i = random.int(2, list ? 6 : 7); i > 0; i--)
      lines.push(list ? `- ${generateSentence(random)}` : generateSentence(random));
    const paragraph = lines.join(list ? "\n" : " ");
    paragraphs.push(paragraph);
    length += paragraph.length + 2;
  }
  corpus = paragraphs.join("\n\n");
  return corpus;
}

/**
 * Markdown body of `bytes` characters (at least the heading): a heading, then a run of the corpus
 * starting at a random sentence. Slicing a fixed corpus keeps rendering a 500-resource page cheap.
 */
export function generateBody(title: string, bytes: number, random: Random): string {
  const heading = `# ${title}\n\n`;
  const text = getCorpus();
  const want = Math.min(Math.max(0, bytes - heading.length), text.length / 2);
  const from = text.indexOf(". ", random.int(0, text.length - want - 200));
  const start = from < 0 ? 0 : from + 2;
  return heading + text.slice(start, start + want);
}

/** Content size in characters: log-normal, median ~3 KB, from ~200 bytes to ~60 KB. */
export function generateSize(random: Random): number {
  const size = Math.exp(Math.log(3000) + 0.95 * random.gauss());
  return Math.round(Math.min(60_000, Math.max(200, size)));
}
