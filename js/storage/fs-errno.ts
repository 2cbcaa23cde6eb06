/** A Node error's `code` (`ENOENT`, …), if it has one. */
export const code = (error: unknown) => (error as NodeJS.ErrnoException)?.code;
