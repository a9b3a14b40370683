// When the server process dies, restart it unless it keeps dying: more than `limit` crashes within
// `windowMs` means something is wrong with the installation, and restarting again would only loop.

export class RestartPolicy {
  private crashes: number[] = [];

  constructor(
    private readonly limit = 4,
    private readonly windowMs = 3 * 60 * 1000,
  ) {}

  /** Records a crash at `now` (ms) and says whether to restart. */
  shouldRestart(now: number): boolean {
    this.crashes = [...this.crashes.filter((t) => now - t < this.windowMs), now];
    return this.crashes.length <= this.limit;
  }

  get recentCrashes(): number {
    return this.crashes.length;
  }

  reset(): void {
    this.crashes = [];
  }
}
