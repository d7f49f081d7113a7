/**
 * Text from the service (its error texts, names) printed for a person: a control character in it
 * must not reach the terminal, where an escape sequence could clear the screen, rewrite earlier
 * lines, retitle the window or forge a line of its own. Each is shown as `\xHH` instead.
 */

/** The C0 controls, DEL and the C1 controls (`\x9b` is a CSI on some terminals). */
const CONTROL = /\p{Cc}/gu;

/** One line as a terminal may show it: every control character in it written as `\xHH`. */
export function printable(line: string): string {
  return line.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** Lines as one text ending in a newline, each of them printable. */
export function printableLines(lines: readonly string[]): string {
  return `${lines.map(printable).join("\n")}\n`;
}
