/**
 * A record's value without JSON.parse, for the usual record: a flat object. Built from the
 * record's raw text, which the scanner has already validated.
 */

/** The fast path remembers the keys of the last flat record up to this many. */
const MAX_SHAPE_KEYS = 256;

/**
 * The fast path: the value of a record that is a flat JSON object (every member value a string,
 * number, true, false or null; NaN/Infinity/-Infinity too), built directly from `raw`, its
 * complete text already validated by the scanner. `build` returns undefined for anything else (a
 * nested object or array, a non-object element), which then takes the JSON.parse path.
 *
 * It gives exactly what JSON.parse of the rewritten text gives: a string or key without escapes
 * is a slice of `raw` (raw is the UTF-8 decoding of the whole record, and since UTF-8 decoding
 * resynchronizes on every ASCII byte, that equals decoding each token alone); one with escapes
 * is decoded by JSON.parse of just that token; a number (or NaN/Infinity) is its source text; a
 * repeated key keeps its first position and its last value; `__proto__` is an own property.
 *
 * Two ways to find the tokens: when the scanner recorded where each member ends (the ',' or '}'
 * at depth 1) and the record is ASCII, has no backslash and no whitespace around its tokens (the
 * usual compact record), each member is sliced at known places (`compact`); else, or as soon as
 * that does not hold, the record's text is tokenized again (`general`).
 *
 * The keys of the last record are remembered (the shape), so the usual record repeating them is
 * matched with `startsWith` instead of being sliced (a fresh key string would have to be looked
 * up in V8's string table on every property store).
 */
export class FlatBuilder {
  /** The keys of the last flat record, in order (empty when not cacheable); none is `__proto__`. */
  private shape: string[] = [];
  /** This record's keys (reused; `count` long). */
  private readonly keys: string[] = [];
  private count = 0;
  /** Every key of this record so far was the shape's key at its index. */
  private same = true;

  /** `ends[k]` is where member k ends in `raw` (used when `ends` is given and `count` fits in it). */
  build(raw: string, ends: Float64Array | undefined, count: number): object | undefined {
    if (raw.charCodeAt(0) !== 0x7b) return undefined;
    this.same = true;
    let obj = ends !== undefined && count > 0 && count <= ends.length ? this.compact(raw, ends, count) : undefined;
    if (obj === undefined) {
      this.same = true;
      obj = this.general(raw);
    }
    if (obj === null) return undefined;
    // Remember the keys for the next record when they differ from the last ones. Only plain keys
    // can be: matching a key by its text needs one without '"' or '\\', and a shape key is
    // stored without the __proto__ check.
    const m = this.count;
    if (!this.same || m !== this.shape.length) {
      const keys = this.keys;
      let plain = m <= MAX_SHAPE_KEYS;
      for (let k = 0; plain && k < m; k++) {
        const key = keys[k]!;
        plain = key !== '__proto__' && key.indexOf('"') < 0 && key.indexOf('\\') < 0;
      }
      this.shape = plain ? keys.slice(0, m).map(internalize) : [];
    }
    return obj;
  }

  /**
   * The object, from the member ends; null for a nested value; undefined when the record is not
   * in the compact form (then the caller starts again with `general`).
   */
  private compact(raw: string, ends: Float64Array, count: number): object | null | undefined {
    if (raw.indexOf('\\') >= 0) return undefined;
    const shape = this.shape;
    const keys = this.keys;
    const obj: Record<string, unknown> = {};
    let start = 0; // the '{' or ',' before the member
    for (let m = 0; m < count; m++) {
      const end = ends[m]!;
      if (raw.charCodeAt(start + 1) !== 0x22) return undefined;
      const ks = start + 2;
      const cached = this.same && m < shape.length ? shape[m]! : undefined;
      let key: string;
      let j: number;
      if (cached !== undefined && raw.startsWith(cached, ks) && raw.charCodeAt(ks + cached.length) === 0x22) {
        key = cached;
        j = ks + cached.length;
      } else {
        this.same = false;
        j = raw.indexOf('"', ks);
        key = raw.slice(ks, j);
      }
      if (raw.charCodeAt(j + 1) !== 0x3a) return undefined;
      const vs = j + 2;
      const c = raw.charCodeAt(vs);
      const last = raw.charCodeAt(end - 1);
      let value: unknown;
      if (c === 0x22) {
        if (last !== 0x22 || end - 1 === vs) return undefined;
        value = raw.slice(vs + 1, end - 1);
      } else if (c === 0x74) {
        if (end !== vs + 4) return undefined;
        value = true;
      } else if (c === 0x66) {
        if (end !== vs + 5) return undefined;
        value = false;
      } else if (c === 0x6e) {
        if (end !== vs + 4) return undefined;
        value = null;
      } else if (c === 0x7b || c === 0x5b) {
        return null;
      } else {
        // A number, NaN, Infinity or -Infinity, with no whitespace before or after it.
        if (!((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x4e || c === 0x49)) return undefined;
        if (last === 0x20 || last === 0x0a || last === 0x0d || last === 0x09) return undefined;
        value = raw.slice(vs, end);
      }
      keys[m] = key;
      if (key === cached) obj[key] = value;
      else put(obj, key, value);
      start = end;
    }
    this.count = count;
    return obj;
  }

  /** The object, by tokenizing `raw`; null for a nested value. */
  private general(raw: string): object | null {
    const n = raw.length;
    const shape = this.shape;
    const keys = this.keys;
    const obj: Record<string, unknown> = {};
    // Position of the next backslash (n when none): a string ending before it has no escape.
    let bs = raw.indexOf('\\');
    if (bs < 0) bs = n;
    let i = 1;
    let c = raw.charCodeAt(i);
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = raw.charCodeAt(++i);
    let m = 0; // member index
    if (c !== 0x7d) {
      for (;;) {
        // At the opening quote of a key.
        const ks = i + 1;
        let key: string;
        let j: number;
        const cached = this.same && m < shape.length ? shape[m]! : undefined;
        if (cached !== undefined && raw.startsWith(cached, ks) && raw.charCodeAt(ks + cached.length) === 0x22) {
          key = cached;
          j = ks + cached.length;
        } else {
          this.same = false;
          j = raw.indexOf('"', ks);
          if (j > bs) {
            j = skipEscapedString(raw, ks);
            key = JSON.parse(raw.slice(i, j + 1)) as string;
            bs = nextBackslash(raw, j + 1);
          } else key = raw.slice(ks, j);
        }
        // After the key: optional whitespace, ':', optional whitespace, the value.
        i = j + 1;
        c = raw.charCodeAt(i);
        while (c !== 0x3a) c = raw.charCodeAt(++i);
        c = raw.charCodeAt(++i);
        while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = raw.charCodeAt(++i);
        let value: unknown;
        if (c === 0x22) {
          const vs = i + 1;
          j = raw.indexOf('"', vs);
          if (j > bs) {
            j = skipEscapedString(raw, vs);
            value = JSON.parse(raw.slice(i, j + 1));
            bs = nextBackslash(raw, j + 1);
          } else value = raw.slice(vs, j);
          i = j + 1;
        } else if (c === 0x74) {
          value = true;
          i += 4;
        } else if (c === 0x66) {
          value = false;
          i += 5;
        } else if (c === 0x6e) {
          value = null;
          i += 4;
        } else if (c === 0x7b || c === 0x5b) {
          return null;
        } else {
          // A number, NaN, Infinity or -Infinity: its text, up to the next ',', '}' or whitespace.
          const vs = i;
          c = raw.charCodeAt(++i);
          while (c !== 0x2c && c !== 0x7d && c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09)
            c = raw.charCodeAt(++i);
          value = raw.slice(vs, i);
        }
        keys[m++] = key;
        if (key === cached) obj[key] = value;
        else put(obj, key, value);
        // After the value: optional whitespace, then ',' (and the next key) or '}'.
        c = raw.charCodeAt(i);
        while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = raw.charCodeAt(++i);
        if (c === 0x7d) break;
        c = raw.charCodeAt(++i);
        while (c !== 0x22) c = raw.charCodeAt(++i);
      }
    }
    this.count = m;
    return obj;
  }
}

/**
 * The same text as an internalized string (what V8 uses as a property name): a key sliced from
 * the record text is not one, and each property store with it would look it up again.
 */
function internalize(key: string): string {
  return Object.keys({ [key]: 0 })[0]!;
}

/**
 * Sets a member as JSON.parse does: a repeated key keeps its place and takes the last value; `__proto__` is an own
 * property.
 */
function put(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** The position of the closing quote of the string whose text starts at `i` (it has escapes). */
function skipEscapedString(raw: string, i: number): number {
  for (;;) {
    const c = raw.charCodeAt(i);
    if (c === 0x22) return i;
    i += c === 0x5c ? 2 : 1;
  }
}

function nextBackslash(raw: string, from: number): number {
  const at = raw.indexOf('\\', from);
  return at < 0 ? raw.length : at;
}
