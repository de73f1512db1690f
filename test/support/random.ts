/** A small deterministic generator for randomized tests (xorshift32), so that a failure reproduces from its seed. */
export function xorshift(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

/** One of `xs`, by `rand`. */
export function pickWith(rand: () => number): <T>(xs: readonly T[]) => T {
  return (xs) => xs[Math.floor(rand() * xs.length)]!;
}
