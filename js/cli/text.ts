/** Numbers and tables as the command prints them. */

export const n = (value: number) => value.toLocaleString("en-US");

/** Rows of cells as aligned text; `right` lists the columns aligned right. */
export function table(rows: string[][], right: number[] = []): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map((row) => row.map((cell, i) => (right.includes(i) ? cell.padStart(widths[i]) : i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join("  ").trimEnd())
    .join("\n");
}
