/**
 * Micro-benchmark of the listing parser alone: N generated records (~260 bytes each, with
 * ~30-digit decimals, 10% with non-ASCII text) are generated in memory as Buffer chunks, then fed
 * to the parser; prints parse seconds (wall and CPU, generation excluded), MB/s, and RSS: after
 * generation (the document itself is in memory) and the peak while parsing.
 *
 *   npx tsc -p . && node dist/bench/parser-micro.js [records=1000000] [chunkBytes=65536]
 */
import { ListingParser } from '../src/extract/json/listing-parser.js';

const count = Number(process.argv[2] ?? 1_000_000);
const chunkBytes = Number(process.argv[3] ?? 65536);

let seed = 0x2545f491;
function rand(): number {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return seed >>> 0;
}
function digits(n: number): string {
  let s = '';
  while (s.length < n) s += String(rand()).padStart(10, '0');
  return s.slice(0, n);
}

function record(i: number): string {
  const winery = i % 10 === 0 ? `Château Mäder ${i % 97}` : `Winery ${i % 997}`;
  return (
    `{"id":${i + 1},"wpi":"WPI-${String(i % 100000).padStart(6, '0')}","winery":"${winery}",` +
    `"bond_number":"BW-CA-${i % 9000}",` +
    `"inventory_sales":0.${digits(30)},"inventory_bulk":${rand() % 100000}.${digits(28)},` +
    `"removals":-${rand() % 10}.${digits(3)}e-7,"taxable":${i % 3 === 0},"note":null,"first_sale":"2021-03-04"}`
  );
}

/** Yields the document in chunks of exactly `chunkBytes` (the last one shorter). */
function* documentChunks(): Generator<Buffer> {
  let pending = '{"message":"ok","count":' + count + ',"bulk_wine_reconciliation":[';
  let carry = Buffer.alloc(0);
  const flush = function* (final: boolean): Generator<Buffer> {
    let buf = Buffer.concat([carry, Buffer.from(pending, 'utf8')]);
    pending = '';
    let at = 0;
    while (buf.length - at >= chunkBytes) {
      yield buf.subarray(at, at + chunkBytes);
      at += chunkBytes;
    }
    carry = buf.subarray(at);
    if (final && carry.length > 0) yield carry;
    buf = carry;
  };
  for (let i = 0; i < count; i++) {
    pending += (i === 0 ? '' : ',') + record(i);
    if (pending.length >= 4 * chunkBytes) yield* flush(false);
  }
  pending += '],"recordCount":' + count + '}';
  yield* flush(true);
}

// Generate the whole document first (not timed), as the chunks the parser will get.
const chunks = [...documentChunks()];
const rssAfterGeneration = process.memoryUsage.rss();

const parser = new ListingParser();
let records = 0;
let problems = 0;
let rawChars = 0;
let peakRss = rssAfterGeneration;
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
for (let k = 0; k < chunks.length; k++) {
  const out = parser.push(chunks[k]!);
  records += out.length;
  for (const r of out) {
    if (r.problem !== undefined) problems++;
    rawChars += r.raw.length;
  }
  if ((k & 15) === 0) peakRss = Math.max(peakRss, process.memoryUsage.rss());
}
const envelope = parser.end();
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
peakRss = Math.max(peakRss, process.memoryUsage.rss());

const mb = envelope.bytes / 1e6;
console.log(
  JSON.stringify({
    records,
    problems,
    recordCount: envelope.recordCount,
    bytes: envelope.bytes,
    avgRecordBytes: Math.round(envelope.bytes / Math.max(1, count)),
    chunkBytes,
    parseSeconds: Number(seconds.toFixed(3)),
    cpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(3)),
    mbPerSecond: Number((mb / seconds).toFixed(1)),
    rssAfterGenerationMB: Math.round(rssAfterGeneration / 1048576),
    peakRssDuringParseMB: Math.round(peakRss / 1048576),
    parserRssGrowthMB: Math.round((peakRss - rssAfterGeneration) / 1048576),
    rawChars,
  }),
);
