/** The command's own errors, by exit code, and how a file system error reads in them. */

/** A mistake in the command line: exit code 2. */
export class UsageError extends Error {}
/** A file that cannot be read or is not a conversation: exit code 1. */
export class InputError extends Error {}

export function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException)?.code;
  if (code === "ENOENT") return "no such file";
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (code === "EISDIR") return "it is a directory";
  return error instanceof Error ? error.message : String(error);
}
