/** A filesystem error (EACCES, EROFS, ...) as its code and what it means, for one-line messages. */

const REASONS: Record<string, string> = {
  EACCES: "permission denied for this user",
  EPERM: "not permitted",
  EROFS: "read-only filesystem",
  ENOTDIR: "a part of the path is not a directory",
  ENOENT: "its filesystem does not allow creating it",
  ENOSPC: "no space left on the device",
  EISDIR: "it is a directory",
};

export function describeFsError(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && REASONS[code]) return `${code}: ${REASONS[code]}`;
  return error instanceof Error ? error.message : String(error);
}
