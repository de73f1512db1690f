/**
 * Writes a generated listing to disk once per (size, variant): the JSON document, its gzip (what
 * a server sends to a client that offers gzip; level 1, nginx's default) and the COPY text of the
 * rows it loads (for the floor). Files are reused by later runs with the same size and variant.
 */
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { access, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { ListingShape, type Variant } from './realistic-records.js';

/** Bumped when the generator changes, so that stale files are not reused. */
const GENERATOR_VERSION = 3;
/** Per variant, bumped when only that variant changes (4: 'changed' spread over every 100th id, two fields). */
const VARIANT_VERSION: Partial<Record<Variant, number>> = { changed: 4 };
const FLUSH_AT = 1 << 20;

export interface ListingFiles {
  records: number;
  /** Records the sync loads (valid, the last of their id). */
  rows: number;
  json: string;
  gzip: string;
  /** COPY text of the loaded rows (extra_fields included), for the floor; absent for the all-rejected variants. */
  rowsTsv: string | undefined;
}

export async function listingFiles(
  dir: string,
  records: number,
  variant: Variant,
  options: { gzip?: boolean; log?: (m: string) => void } = {},
): Promise<ListingFiles> {
  const shape = new ListingShape(records);
  const base = join(dir, `listing-v${VARIANT_VERSION[variant] ?? GENERATOR_VERSION}-${records}-${variant}`);
  const files: ListingFiles = {
    records,
    rows: variant === 'renamed' || variant === 'empty' ? 0 : shape.rows,
    json: `${base}.json`,
    gzip: `${base}.json.gz`,
    rowsTsv: variant === 'renamed' || variant === 'empty' ? undefined : `${base}.tsv`,
  };
  if (!(await exists(files.json))) {
    options.log?.(`generating ${records} records (${variant}) into ${files.json}`);
    await writeListing(shape, variant, files);
  }
  if (options.gzip !== false && !(await exists(files.gzip))) {
    options.log?.(`compressing ${files.json}`);
    await pipeline(
      createReadStream(files.json, { highWaterMark: FLUSH_AT }),
      createGzip({ level: 1 }),
      createWriteStream(`${files.gzip}.part`),
    );
    await rename(`${files.gzip}.part`, files.gzip);
  }
  return files;
}

async function writeListing(shape: ListingShape, variant: Variant, files: ListingFiles): Promise<void> {
  const json = createWriteStream(`${files.json}.part`);
  const tsv = files.rowsTsv ? createWriteStream(`${files.rowsTsv}.part`) : undefined;
  const n = shape.records;
  let out = `{"message":"Bulk wine reconciliation data","count":${n},"bulk_wine_reconciliation":[`;
  let rows = '';
  for (let i = 0; i < n; i++) {
    const r = shape.record(i, variant);
    out += i === 0 ? r.json : `,${r.json}`;
    if (r.row !== undefined && tsv) rows += `${r.row}\n`;
    if (out.length >= FLUSH_AT) {
      await write(json, out);
      out = '';
    }
    if (rows.length >= FLUSH_AT && tsv) {
      await write(tsv, rows);
      rows = '';
    }
  }
  await write(json, `${out}],"recordCount":${n}}`);
  await close(json);
  await rename(`${files.json}.part`, files.json);
  if (tsv && files.rowsTsv) {
    await write(tsv, rows);
    await close(tsv);
    await rename(`${files.rowsTsv}.part`, files.rowsTsv);
  }
}

function write(stream: WriteStream, text: string): Promise<void> {
  if (stream.write(text)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (error?: Error) => {
      stream.off('drain', done);
      stream.off('error', done);
      if (error) reject(error);
      else resolve();
    };
    stream.on('drain', done);
    stream.on('error', done);
  });
}

function close(stream: WriteStream): Promise<void> {
  return new Promise((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
