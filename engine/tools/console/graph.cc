#include "console/graph.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>

namespace phasekey::console {

std::string HighlightedDot(const Flow& flow, const std::string& point) {
  std::string dot = flow.ToDot();
  if (point != "finished" && flow.Find(point) == nullptr) return dot;
  std::string quoted;
  for (const char c : point) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  const std::size_t end = dot.rfind('}');
  if (end == std::string::npos) return dot;
  dot.insert(end, "  \"" + quoted + "\" [style=filled, fillcolor=\"#ffd54f\", penwidth=2];\n");
  return dot;
}

Result<std::string> GraphRenderer::Svg(const std::string& dot) {
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(dot);
    if (it != cache_.end()) return it->second;
  }
  // dot reads the file named on its command line; a temporary file avoids
  // a two-way pipe.
  char path[] = "/tmp/phasekey-console-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return Status::FailedPrecondition("cannot create a temporary file for Graphviz");
  const bool written = ::write(fd, dot.data(), dot.size()) == static_cast<ssize_t>(dot.size());
  ::close(fd);
  std::string svg;
  int status = -1;
  if (written) {
    FILE* p = ::popen(("dot -Tsvg " + std::string(path) + " 2>/dev/null").c_str(), "r");
    if (p != nullptr) {
      std::array<char, 4096> buf{};
      std::size_t n = 0;
      while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) svg.append(buf.data(), n);
      status = ::pclose(p);
    }
  }
  ::unlink(path);
  const std::size_t start = svg.find("<svg");
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || start == std::string::npos) {
    return Status::FailedPrecondition("Graphviz `dot` is not available (install the graphviz package)");
  }
  svg.erase(0, start);
  std::lock_guard lock(mu_);
  cache_[dot] = svg;
  return svg;
}

}  // namespace phasekey::console
