/**
 * What a problem concerns, as the name of its row within the mirror (`problems.subject`): a later
 * sighting of the same thing updates that row, and the transaction that shows it fixed deletes it.
 * A failed and an incomplete source of one pair are one subject: the pair's source did not succeed.
 */
export type ProblemGroup = "row" | "source" | "skipped" | "sweep";

export function problemSubject(group: ProblemGroup, userEmail: string, what: string | null): string {
  return JSON.stringify([group, userEmail, what]);
}
