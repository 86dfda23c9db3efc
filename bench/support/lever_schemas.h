// Schema changes of the levers of issue 16 measured on the SQL alone
// (docs/benchmarks.md section 8), for the families that measure them.
#ifndef PHASEKEY_BENCH_SUPPORT_LEVER_SCHEMAS_H_
#define PHASEKEY_BENCH_SUPPORT_LEVER_SCHEMAS_H_

namespace phasekey::bench {

// The key table as a HOT finish needs it: the indexes that read `state`
// (re-drive, reap, attention) dropped, and one on (bucket, created_at), the
// only kind the re-drive and reap scans could use then. The pgbench family
// measures the finish on it, the growth family the re-drive poll.
inline constexpr char kWithoutStateIndexes[] =
    "DROP INDEX phasekey.idempotency_keys_redrive; DROP INDEX phasekey.idempotency_keys_reap; "
    "DROP INDEX phasekey.idempotency_keys_attention; "
    "CREATE INDEX idempotency_keys_created ON phasekey.idempotency_keys (bucket, created_at)";

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_LEVER_SCHEMAS_H_
