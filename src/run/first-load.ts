/**
 * A first load in a run: into a table with no row at all, each row is COPYed once, straight into
 * bulk_wine_reconciliation. Rule: memory stays flat; duplicates and BI rounding are settled on the
 * set-aside ids only (docs/internals.md, A first load).
 */
import { join } from 'node:path';
import { AppendFile } from '../io/file-write.js';
import type { PoolClient } from '../db/pool.js';
import type { Row } from '../fields.js';
import type { Logger } from '../log.js';
import type { BiRounding } from '../load/bi-rounding.js';
import { copyRows, firstLoadMarks, settleSetAside, type FirstLoadMarks } from '../load/first-load.js';
import { BiTally } from '../transform/bi-effect.js';
import { copyLine, rowLine, type FingerprintHalves } from '../transform/copy-line.js';
import { CopyWriter, type RecordFields } from '../transform/record-copy.js';
import { InitialFingerprints, saveSettledFingerprints } from '../fingerprints/initial-fingerprints.js';
import { IdBitmap } from './id-bitmap.js';

/** Set-aside and fingerprint bytes are written out once this much is queued. */
const FLUSH_AT = 256 * 1024;

/** An earlier copy of an id, for sync_rejects: `offset` where it starts when known (else found from its position). */
export interface LosingCopy {
  position: number;
  id: string;
  offset?: number;
}

export class FirstLoad {
  /** The table's COPY lines, written straight from a record's bytes. */
  readonly rows: CopyWriter;
  private readonly setAside: CopyWriter;
  private readonly setAsideFile: AppendFile;
  /** Ids within the bitmap of which a copy was set aside. */
  private readonly setAsideIds = new IdBitmap();
  private setAsideCount = 0;
  private readonly fingerprints: InitialFingerprints;
  /** What the BI views do to the values of the rows in the table: as written, then as settled. */
  private readonly bi: BiTally;

  private constructor(
    private readonly marks: FirstLoadMarks,
    private readonly ids: IdBitmap,
    dir: string,
    biScale: number,
    extras: boolean,
  ) {
    this.bi = new BiTally(biScale);
    this.rows = new CopyWriter(extras, Buffer.from(marks.rowSuffix), this.bi);
    this.setAside = new CopyWriter(extras);
    this.setAsideFile = new AppendFile(join(dir, 'set-aside.copy'));
    this.fingerprints = new InitialFingerprints(join(dir, 'fingerprints.bin'));
  }

  /**
   * A first load when the table has no row at all (read in the run's transaction, which holds the
   * run's advisory lock, before anything is COPYed); otherwise undefined. `ids` is the run's id
   * bitmap; `dir` the run's temp directory; `biScale` the BI views' scale S; `extras` whether
   * records' extra members are kept (SYNC_EXTRA_FIELDS=keep).
   */
  static async open(
    client: PoolClient,
    {
      runId,
      ids,
      dir,
      biScale,
      extras,
    }: { runId: string; ids: IdBitmap; dir: string; biScale: number; extras: boolean },
    log?: Logger,
  ): Promise<FirstLoad | undefined> {
    const marks = await firstLoadMarks(client, runId, log);
    return marks && new FirstLoad(marks, ids, dir, biScale, extras);
  }

  /**
   * The byte-level path: writes the record `b[start, end)` (an `id` below 2^53; `hash`: its fingerprint halves and
   * shape) where it goes; false when the writer declines it.
   */
  write(
    b: Buffer,
    start: number,
    end: number,
    fields: RecordFields,
    id: number,
    position: number,
    byteOffset: number,
    hash: Int32Array,
  ): boolean {
    if (this.ids.fresh(id)) {
      if (!this.rows.write(b, start, end, fields, position, byteOffset, hash)) return false;
      this.ids.addNumber(id);
      this.fingerprints.add(id, hash[0]!, hash[1]!, hash[2]!, position);
      return true;
    }
    if (!this.setAside.write(b, start, end, fields, position, byteOffset, hash)) return false;
    this.noteSetAside(id);
    return true;
  }

  /**
   * The zod path: the row's line for the table's COPY (`extra`: its extra_fields COPY text), or '' when it is set
   * aside.
   */
  line(
    row: Row,
    extra: string | null,
    position: number,
    byteOffset: number,
    byteLength: number,
    fingerprint: FingerprintHalves | undefined,
  ): string {
    // An id of more than 9 digits is beyond the bitmap (2^27) anyway.
    const id = row.id.length <= 9 ? Number(row.id) : Infinity;
    if (this.ids.fresh(id)) {
      this.ids.addNumber(id);
      // The zod path's records get no shape: theirs is read each time they are compared.
      this.fingerprints.add(id, fingerprint?.[0] ?? 0, fingerprint?.[1] ?? 0, 0, position);
      this.bi.addRow(row);
      return rowLine(row, extra, this.marks.rowSuffix);
    }
    this.setAsideFile.append(Buffer.from(copyLine(position, row, extra, byteOffset, byteLength, fingerprint)));
    this.noteSetAside(id);
    return '';
  }

  /** Whether flush is due: called between chunks, where the parse may wait. */
  get flushDue(): boolean {
    return this.setAside.length + this.setAsideFile.pending + this.fingerprints.pending >= FLUSH_AT;
  }

  async flush(): Promise<void> {
    if (this.setAside.length > 0) this.setAsideFile.append(this.setAside.take());
    await this.setAsideFile.flush();
    await this.fingerprints.flush();
  }

  /** Streams the table's COPY lines into it. */
  copyRows(client: PoolClient, lines: AsyncIterable<string | Buffer>, signal?: AbortSignal): Promise<void> {
    return copyRows(client, lines, signal);
  }

  /**
   * After the whole-listing checks: the fingerprints COPYed, and the duplicate ids settled, the
   * last copy of each in the table (and its fingerprint). Returns the losing copies.
   */
  async settle(client: PoolClient, runId: string, log?: Logger): Promise<LosingCopy[]> {
    await this.flush();
    await this.setAsideFile.close();
    const anySetAside = this.setAsideCount > 0;
    const inTable = await this.fingerprints.store(
      client,
      this.marks.xmin,
      anySetAside ? (id) => this.setAsideIds.has(id) : undefined,
      log,
    );
    if (!anySetAside) return [];
    const { losers, written, biChange } = await settleSetAside(
      client,
      { runId, path: this.setAsideFile.path, inTable, biScale: this.bi.scale },
      log,
    );
    this.bi.rounded += biChange.rounded;
    this.bi.overflow += biChange.overflow;
    await saveSettledFingerprints(client, log);
    return [
      ...inTable.filter((c) => written.has(c.id)),
      ...losers.map((row) => ({ position: Number(row.position), id: row.record_id, offset: Number(row.raw_offset) })),
    ];
  }

  /** What the BI views do to the table's live values: every row written, duplicate ids settled (after settle). */
  get biRounding(): BiRounding {
    return { scale: this.bi.scale, rounded: this.bi.rounded, overflow: this.bi.overflow };
  }

  /** After a failed run: the files closed (the run's temp directory is removed with them). */
  async discard(): Promise<void> {
    await this.setAsideFile.discard();
    await this.fingerprints.discard();
  }

  private noteSetAside(id: number): void {
    this.setAsideIds.addNumber(id);
    this.setAsideCount++;
  }
}
