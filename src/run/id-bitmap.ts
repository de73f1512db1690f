/**
 * Remembers ids up to 2^27 in a bitmap (at most 16 MiB, grown as needed) so that a listing
 * without duplicate ids, the usual case, skips the SQL duplicate pass. An id beyond the bitmap
 * or seen twice answers false: "maybe a duplicate", and the SQL pass decides.
 */
export class IdBitmap {
  private static readonly MAX_ID = 2 ** 27;
  private bits = new Uint8Array(1 << 17);

  /** False when the id may have been seen before. */
  add(id: string): boolean {
    if (id.length > 9) return false;
    return this.addNumber(Number(id)); // an integer of at most 9 digits: exact
  }

  /** True when `n` is within the bitmap and not added yet: surely the first of its id. */
  fresh(n: number): boolean {
    return n < IdBitmap.MAX_ID && !this.has(n);
  }

  /** True when `n` was added (never for an id beyond the bitmap). */
  has(n: number): boolean {
    const byte = n >>> 3;
    return n < IdBitmap.MAX_ID && byte < this.bits.length && (this.bits[byte]! & (1 << (n & 7))) !== 0;
  }

  addNumber(n: number): boolean {
    if (n >= IdBitmap.MAX_ID) return false;
    const byte = n >>> 3;
    if (byte >= this.bits.length) {
      let size = this.bits.length;
      while (size <= byte) size *= 2;
      const grown = new Uint8Array(size);
      grown.set(this.bits);
      this.bits = grown;
    }
    const mask = 1 << (n & 7);
    if ((this.bits[byte]! & mask) !== 0) return false;
    this.bits[byte]! |= mask;
    return true;
  }
}
