// Figures in the docs that come from test runs, never typed by hand: the
// tests write result files into docs/results/, and the docs' generated
// sections are rendered from them (render_doc_results, or RenderDocs() from
// the test that wrote a file). docs_test fails when a section differs from
// what its result file renders.
//
// A generated section sits between two markers, alone on their lines or
// inline:
//   <!-- generated:NAME -->...<!-- /generated:NAME -->
//
// Result files (each documented where it is written; RecordResult says when
// a test writes them here):
//   crash_matrix.json        tests/ride_booking/crash_matrix_test.cc
//   malformed_requests.json  tests/ride_booking/malformed_request_test.cc
//   failover.jsonl           tests/ha/failover_test.sh, one run per line
//   history_<run>.json       tests/history/history_test.cc, the history
//                            checker's figures of each run
//   benchmarks/console.json  bench/console_bench.cc (run by bench/run_all.sh
//                            or by hand), rendered into docs/console.md
//   benchmarks/capacity.json bench/capacity_bench.cc (the same way),
//                            rendered into docs/capacity.md (capacity_doc.h)
#ifndef PHASEKEY_TESTS_DOC_RESULTS_DOC_RESULTS_H_
#define PHASEKEY_TESTS_DOC_RESULTS_DOC_RESULTS_H_

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace phasekey::doc_results {

// <source_dir>/docs/results.
std::filesystem::path ResultsDir(const std::filesystem::path& source_dir);

// Writes `result` to <source_dir>/docs/results/<name> (a whole new file,
// renamed into place). Throws std::runtime_error when it cannot.
void WriteResult(const std::filesystem::path& source_dir, const std::string& name, const nlohmann::json& result);

// What a test that measures a figure calls: with PHASEKEY_RECORD_TO_DOCS=1
// in the environment (`./run.sh record`), WriteResult into the source tree
// and RenderDocs; otherwise the file goes to <binary_dir>/results/<name>
// only, so an ordinary test run leaves the checkout as it found it. Throws
// std::runtime_error when it cannot write.
void RecordResult(const std::filesystem::path& source_dir, const std::filesystem::path& binary_dir,
                  const std::string& name, const nlohmann::json& result);

// One generated section: the doc it is in (relative to the source
// directory), its name, and its text as rendered from the result files.
struct Section {
  std::string doc;
  std::string name;
  std::string text;
};

// What RenderSections does about a result file that does not exist.
enum class Missing { kFail, kSkip };

// Renders every generated section from the result files (with kSkip, those
// whose file exists). Throws std::runtime_error naming a missing (kFail) or
// malformed result file.
std::vector<Section> RenderSections(const std::filesystem::path& source_dir, Missing missing = Missing::kFail);

// The text between the markers of section `name` in `markdown`; nullopt when
// the markers are missing.
std::optional<std::string> SectionText(const std::string& markdown, const std::string& name);

// `markdown` with the text of section `name` replaced by `text`. Throws
// std::runtime_error when the markers are missing.
std::string ReplaceSection(const std::string& markdown, const std::string& name, const std::string& text);

// Rewrites the generated sections of the docs from the result files that
// exist (a section without its file is left as it is), holding an exclusive lock on docs/results/.lock (tests that
// render may run at once). Throws std::runtime_error when it cannot.
void RenderDocs(const std::filesystem::path& source_dir);

}  // namespace phasekey::doc_results

#endif  // PHASEKEY_TESTS_DOC_RESULTS_DOC_RESULTS_H_
