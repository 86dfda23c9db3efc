#include "admin/table.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace phasekey::admin {
namespace {

std::string Cell(const nlohmann::json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string FormatTable(const nlohmann::json& rows, std::vector<std::string> columns) {
  if (!rows.is_array()) return FormatRecord(rows);
  if (columns.empty() && !rows.empty()) {
    for (const auto& [k, v] : rows[0].items()) columns.push_back(k);
  }
  std::vector<std::size_t> width;
  for (const auto& c : columns) width.push_back(c.size());
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : rows) {
    cells.emplace_back();
    for (std::size_t i = 0; i < columns.size(); ++i) {
      cells.back().push_back(row.contains(columns[i]) ? Cell(row[columns[i]]) : "");
      width[i] = std::max(width[i], cells.back().back().size());
    }
  }
  auto line = [&](const std::vector<std::string>& values) {
    std::string out;
    for (std::size_t i = 0; i < values.size(); ++i) {
      out += values[i];
      if (i + 1 < values.size()) out += std::string(width[i] - values[i].size() + 2, ' ');
    }
    return out + "\n";
  };
  std::string out = line(columns);
  for (const auto& row : cells) out += line(row);
  if (rows.empty()) out += "(none)\n";
  return out;
}

std::string FormatRecord(const nlohmann::json& object) {
  std::size_t width = 0;
  for (const auto& [k, v] : object.items()) width = std::max(width, k.size());
  std::string out;
  for (const auto& [k, v] : object.items()) out += k + ":" + std::string(width - k.size() + 1, ' ') + Cell(v) + "\n";
  return out;
}

std::vector<std::string> ForeignPhases(const Flow& flow) {
  std::vector<std::string> out;
  for (const auto& n : flow.nodes()) {
    if (n.kind == Flow::PhaseKind::kForeign) out.push_back(n.phase);
  }
  return out;
}

Status WriteGraph(const std::string& dot, const std::string& format, const std::string& path) {
  if (format == "dot") {
    if (path.empty()) {
      std::cout << dot;
      return Status::OK();
    }
    std::ofstream f(path);
    f << dot;
    return f ? Status::OK() : Status::InvalidArgument("cannot write " + path);
  }
  // Graphviz reads DOT on stdin and writes the image to -o FILE or stdout.
  const std::string cmd = "dot -T" + format + (path.empty() ? "" : " -o '" + path + "'");
  if (path.find('\'') != std::string::npos) return Status::InvalidArgument("output path must not contain a quote");
  FILE* p = ::popen(cmd.c_str(), "w");
  if (p == nullptr) return Status::FailedPrecondition("cannot run Graphviz `dot`");
  std::fwrite(dot.data(), 1, dot.size(), p);
  const int status = ::pclose(p);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::FailedPrecondition("Graphviz `dot` failed (is the graphviz package installed?)");
  }
  return Status::OK();
}

}  // namespace phasekey::admin
