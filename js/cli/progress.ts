/**
 * Progress on stderr, only for a person watching (stderr a TTY) and only on long files. A few
 * lines of our own rather than a dependency: the package ships to browsers and has none.
 */

export class Progress {
  private drawn = false;
  private lastDraw = 0;
  constructor(private readonly enabled: boolean) {}

  update(label: string, done: number, total: number, unit = ""): void {
    if (!this.enabled || total <= 0) return;
    const now = Date.now();
    if (done < total && now - this.lastDraw < 80) return;
    this.lastDraw = now;
    const width = 28;
    const ratio = Math.min(1, done / total);
    const filled = Math.round(ratio * width);
    const amount = unit === "MB" ? `${(done / 1e6).toFixed(1)}/${(total / 1e6).toFixed(1)} MB` : `${done.toLocaleString("en-US")}/${total.toLocaleString("en-US")}${unit}`;
    process.stderr.write(`\r${label.padEnd(9)} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(Math.round(ratio * 100)).padStart(3)}% ${amount}\x1b[K`);
    this.drawn = true;
  }

  /** A step that is one call: shown as under way. */
  step(label: string): void {
    if (!this.enabled) return;
    process.stderr.write(`\r${label.padEnd(9)} …\x1b[K`);
    this.drawn = true;
  }

  clear(): void {
    if (this.drawn) process.stderr.write("\r\x1b[K");
    this.drawn = false;
  }
}

/** Files from this size on show progress. */
export const LONG_FILE = 1_000_000;
