// A flow's graph as inline SVG: the DOT of `flows graph` (Flow::ToDot)
// rendered by Graphviz `dot`, found on PATH at run time, with one recovery
// point highlighted.
#ifndef PHASEKEY_TOOLS_SRC_CONSOLE_GRAPH_H_
#define PHASEKEY_TOOLS_SRC_CONSOLE_GRAPH_H_

#include <map>
#include <mutex>
#include <string>

#include "phasekey/flow.h"
#include "phasekey/status.h"

namespace phasekey::console {

// Flow::ToDot() with `point` drawn filled, when it is one of the flow's
// points or "finished" (any other value is ignored, so nothing from the
// database reaches the DOT text).
std::string HighlightedDot(const Flow& flow, const std::string& point);

// Renders DOT to SVG markup (from "<svg" on). FailedPrecondition when `dot`
// cannot be run or fails. Results are cached by DOT text. Thread-safe.
class GraphRenderer {
 public:
  Result<std::string> Svg(const std::string& dot);

 private:
  std::mutex mu_;
  std::map<std::string, std::string> cache_;  // guarded by mu_
};

}  // namespace phasekey::console

#endif  // PHASEKEY_TOOLS_SRC_CONSOLE_GRAPH_H_
