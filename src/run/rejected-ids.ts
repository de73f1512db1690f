/**
 * The canonical ids of the records a run rejected whose id itself was valid: their live rows are
 * kept as their last valid version rather than soft-deleted (docs/data-safety.md). Held as 8
 * bytes an id (a growable Float64Array, sorted once when asked), not as strings: a listing may
 * reject many records.
 */

/** Ids with more digits than this are not exact as a double: kept as text. */
const EXACT_DIGITS = 15;

export class RejectedIds {
  private small = new Float64Array(1024);
  private count = 0;
  private sorted = true;
  private readonly big = new Set<string>();

  get size(): number {
    return this.count + this.big.size;
  }

  /** `id` is canonical (digits, no leading zero). */
  add(id: string): void {
    if (id.length > EXACT_DIGITS) {
      this.big.add(id);
      return;
    }
    if (this.count === this.small.length) {
      const grown = new Float64Array(this.small.length * 2);
      grown.set(this.small);
      this.small = grown;
    }
    this.small[this.count++] = Number(id);
    this.sorted = false;
  }

  has(id: string): boolean {
    if (id.length > EXACT_DIGITS) return this.big.has(id);
    if (!this.sorted) {
      this.small.subarray(0, this.count).sort();
      this.sorted = true;
    }
    const n = Number(id);
    let lo = 0;
    let hi = this.count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = this.small[mid]!;
      if (v === n) return true;
      if (v < n) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }

  /** `ids` split into those rejected here and the others. */
  split(ids: string[]): { rejected: string[]; others: string[] } {
    const rejected: string[] = [];
    const others: string[] = [];
    if (this.size === 0) return { rejected, others: ids };
    for (const id of ids) (this.has(id) ? rejected : others).push(id);
    return { rejected, others };
  }
}
