-- Every receipt job the enqueuer handed to the receipt sink, one row per
-- delivery: a job delivered again (its batch's delete was lost) has a second
-- row. `sent` says whether that delivery sent the receipt (wrote its row in
-- receipts); a redelivery of a job already sent is deduplicated, sent =
-- false. Nothing here is unique, so a receipt sent twice shows as two rows
-- with sent = true: what the crash matrix counts
-- (tests/ride_booking/crash_matrix_test.cc).
CREATE TABLE receipt_deliveries (
  id           bigserial PRIMARY KEY,
  job_id       bigint NOT NULL,
  ride_id      bigint NOT NULL,
  sent         boolean NOT NULL,
  delivered_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX receipt_deliveries_job_id ON receipt_deliveries (job_id);
