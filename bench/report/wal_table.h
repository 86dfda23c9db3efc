// The durability family's WAL by relation (its one-client probes), as a
// Markdown table: where each variant's WAL bytes per request went.
#ifndef PHASEKEY_BENCH_REPORT_WAL_TABLE_H_
#define PHASEKEY_BENCH_REPORT_WAL_TABLE_H_

#include <string>

#include "report/results.h"

namespace phasekey::bench::report {

// "" when the probes carry no "wal:" counters (results of an older run).
std::string WalByRelationTable(const Family& durability);

}  // namespace phasekey::bench::report

#endif  // PHASEKEY_BENCH_REPORT_WAL_TABLE_H_
