-- Archived listings in chunks: one bytea of gzip per payload fails near PostgreSQL's 1 GB field
-- limit (about 17M records). The compressed body is now split over rows of sync_payload_chunks,
-- and each payload records the compression it used (zstd when the running Node has it, else gzip).

CREATE TABLE sync_payload_chunks (
  run_id  bigint  NOT NULL REFERENCES sync_payloads (run_id) ON DELETE CASCADE,
  seq     integer NOT NULL CHECK (seq >= 0),
  data    bytea   NOT NULL,
  PRIMARY KEY (run_id, seq)
);
-- The data is compressed already: store it out of line without a second compression attempt.
ALTER TABLE sync_payload_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

COMMENT ON TABLE sync_payload_chunks IS 'The compressed body of each archived listing, in order, split into chunks of a few MB so that no value nears the 1 GB field limit.';
COMMENT ON COLUMN sync_payload_chunks.run_id IS 'sync_payloads.run_id of the payload this chunk belongs to.';
COMMENT ON COLUMN sync_payload_chunks.seq IS 'Position of the chunk in the compressed body, from 0.';
COMMENT ON COLUMN sync_payload_chunks.data IS 'Bytes of the compressed body (see sync_payloads.algorithm); the chunks concatenated by seq are the whole compressed stream.';

ALTER TABLE sync_payloads
  ADD COLUMN algorithm text NOT NULL DEFAULT 'gzip' CHECK (algorithm IN ('gzip', 'zstd')),
  ADD COLUMN stored_bytes bigint;

-- Existing single-value bodies (gzip) move into chunks of 8 MiB.
INSERT INTO sync_payload_chunks (run_id, seq, data)
SELECT p.run_id, g.seq, substring(p.body FROM g.seq * 8388608 + 1 FOR 8388608)
FROM sync_payloads p, generate_series(0, greatest(length(p.body) - 1, 0) / 8388608) AS g (seq);
UPDATE sync_payloads SET stored_bytes = length(body);

ALTER TABLE sync_payloads DROP COLUMN body;
ALTER TABLE sync_payloads ALTER COLUMN algorithm DROP DEFAULT;
ALTER TABLE sync_payloads ALTER COLUMN stored_bytes SET NOT NULL;

COMMENT ON TABLE sync_payloads IS 'Archived listing documents (the newest SYNC_ARCHIVE_KEEP), for replay and audit; the compressed bodies are in sync_payload_chunks.';
COMMENT ON COLUMN sync_payloads.algorithm IS 'Compression of the body in sync_payload_chunks: zstd or gzip.';
COMMENT ON COLUMN sync_payloads.stored_bytes IS 'Size of the compressed body in bytes (the sum of its chunks).';
