// Implements the flow graph of phasekey/flow.h.
#include "phasekey/flow.h"

#include <fmt/format.h>

#include "phasekey/fingerprint.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <regex>
#include <set>

namespace phasekey {
namespace {

bool ValidPointName(std::string_view s) {
  static const std::regex re("[a-z][a-z0-9_]{0,62}");
  return std::regex_match(s.begin(), s.end(), re);
}

std::vector<std::string> Names(std::initializer_list<RecoveryPoint> points) {
  std::vector<std::string> out;
  for (const auto& p : points) out.emplace_back(p.name());
  return out;
}

bool ValidParameterName(std::string_view s) {
  static const std::regex re("[a-z_][a-z0-9_]{0,62}");
  return std::regex_match(s.begin(), s.end(), re);
}

// Why `source` cannot key a flow, or "".
std::string KeySourceProblem(const KeySource& source) {
  switch (source.kind()) {
    case KeySource::Kind::kHeader: return "";
    case KeySource::Kind::kBodyField:
      if (source.name().empty() || source.name() == "/") return "the key's JSON pointer must name a member";
      try {
        nlohmann::json::json_pointer pointer(source.name());
      } catch (const nlohmann::json::exception&) {
        return fmt::format("'{}' is not a JSON pointer (RFC 6901)", source.name());
      }
      return "";
    case KeySource::Kind::kPathParameter:
      if (!ValidParameterName(source.name())) return fmt::format("invalid path parameter name '{}'", source.name());
      return "";
  }
  return "unknown key source";
}

// Why the Masked pointers cannot be declared, or "": each must be a JSON
// pointer to something inside the body (RFC 6901: empty would be the whole
// body), and declared once.
std::string MaskedProblem(const std::vector<std::string>& pointers) {
  std::set<std::string> seen;
  for (const std::string& p : pointers) {
    if (p.empty() || p[0] != '/') return fmt::format("masked field '{}' must be a JSON pointer starting with '/'", p);
    try {
      nlohmann::json::json_pointer pointer(p);
    } catch (const nlohmann::json::exception&) {
      return fmt::format("masked field '{}' is not a JSON pointer (RFC 6901: '~' only as ~0 or ~1)", p);
    }
    if (!seen.insert(p).second) return fmt::format("masked field '{}' is declared twice", p);
  }
  return "";
}

// The graph's shape, the input of Flow::version(): what decides a key's
// path, nothing else (no functions, timeouts or older points).
nlohmann::json Shape(const std::string& name, const KeySource& source, const std::vector<Flow::Node>& nodes) {
  nlohmann::json points = nlohmann::json::object();
  for (const Flow::Node& n : nodes) {
    std::vector<std::string> targets = n.targets;
    std::sort(targets.begin(), targets.end());
    points[n.point] = {
        {"phase", n.phase}, {"kind", n.kind == Flow::PhaseKind::kAtomic ? "atomic" : "foreign"}, {"targets", targets}};
  }
  return {{"name", name},
          {"key_source", {{"kind", static_cast<int>(source.kind())}, {"name", source.name()}}},
          {"points", points}};
}

// The points every path from 'started' reaches through atomic phases only:
// those reachable without a foreign phase, minus those reachable after one.
std::set<std::string, std::less<>> EffectFreePoints(const std::vector<Flow::Node>& nodes,
                                                    const std::map<std::string, std::size_t, std::less<>>& by_point) {
  auto reach = [&](std::deque<std::string> todo, bool through_foreign) {
    std::set<std::string, std::less<>> seen(todo.begin(), todo.end());
    while (!todo.empty()) {
      auto it = by_point.find(todo.front());
      todo.pop_front();
      if (it == by_point.end()) continue;  // 'finished'
      const Flow::Node& n = nodes[it->second];
      if (!through_foreign && n.kind == Flow::PhaseKind::kForeign) continue;
      for (const auto& t : n.targets) {
        if (seen.insert(t).second) todo.push_back(t);
      }
    }
    return seen;
  };
  std::deque<std::string> after_foreign;
  for (const Flow::Node& n : nodes) {
    if (n.kind == Flow::PhaseKind::kForeign)
      after_foreign.insert(after_foreign.end(), n.targets.begin(), n.targets.end());
  }
  const auto tainted = reach(after_foreign, true);
  std::set<std::string, std::less<>> out;
  for (const auto& p : reach({std::string(kStarted.name())}, false)) {
    auto it = by_point.find(p);  // a foreign point may have called out already: not effect-free
    if (tainted.count(p) == 0 && it != by_point.end() && nodes[it->second].kind == Flow::PhaseKind::kAtomic) {
      out.insert(p);
    }
  }
  return out;
}

// Why the older points (Renamed, Retired) cannot be declared, or "".
std::string OlderPointsProblem(const std::vector<std::pair<std::string, Retirement>>& older,
                               const std::map<std::string, std::size_t, std::less<>>& by_point) {
  std::set<std::string> seen;
  for (const auto& [point, how] : older) {
    if (!ValidPointName(point)) return fmt::format("invalid older recovery point name '{}'", point);
    if (point == kStarted.name() || point == kFinished.name() || by_point.count(point) != 0) {
      return fmt::format("'{}' is a point of this graph and cannot be renamed or retired", point);
    }
    if (!seen.insert(point).second) return fmt::format("older recovery point '{}' is declared twice", point);
    if (!how.resume_at().empty() && by_point.count(how.resume_at()) == 0) {
      return fmt::format("older recovery point '{}' resumes at '{}', which is not a point of this graph", point,
                         how.resume_at());
    }
  }
  return "";
}

}  // namespace

std::string KeySource::Describe() const {
  switch (kind_) {
    case Kind::kHeader: return "the Idempotency-Key header";
    case Kind::kBodyField: return "the body's " + name_;
    case Kind::kPathParameter: return "the path's {" + name_ + "}";
  }
  return "?";
}

Response JsonResponse(int status, const nlohmann::json& body) {
  return Response{status, {{"Content-Type", "application/json"}}, body.dump()};
}

Flow::Builder::Builder(std::string name) : name_(std::move(name)) {}

Flow::Builder& Flow::Builder::Atomic(RecoveryPoint from, std::string phase, AtomicPhase fn,
                                     std::initializer_list<RecoveryPoint> targets) {
  nodes_.push_back(Node{std::string(from.name()), std::move(phase), PhaseKind::kAtomic, std::move(fn), nullptr,
                        Names(targets), std::chrono::milliseconds(0), std::chrono::seconds(0)});
  return *this;
}

Flow::Builder& Flow::Builder::Foreign(RecoveryPoint from, std::string phase, ForeignPhase fn,
                                      std::initializer_list<RecoveryPoint> targets, std::chrono::milliseconds timeout,
                                      std::chrono::seconds key_retention) {
  return Foreign(from, std::move(phase), std::move(fn), targets, ForeignOptions{timeout, key_retention, false});
}

Flow::Builder& Flow::Builder::Foreign(RecoveryPoint from, std::string phase, ForeignPhase fn,
                                      std::initializer_list<RecoveryPoint> targets, ForeignOptions options) {
  nodes_.push_back(Node{std::string(from.name()), std::move(phase), PhaseKind::kForeign, nullptr, std::move(fn),
                        Names(targets), options.timeout, options.key_retention, options.looks_up});
  return *this;
}

Flow::Builder& Flow::Builder::KeyFrom(KeySource source) {
  key_source_ = std::move(source);
  return *this;
}

Flow::Builder& Flow::Builder::Renamed(RecoveryPoint before, RecoveryPoint now) {
  older_.emplace_back(std::string(before.name()), Retirement::ResumeAt(now));
  renamed_.emplace_back(before.name());
  return *this;
}

Flow::Builder& Flow::Builder::Retired(RecoveryPoint point, Retirement how) {
  older_.emplace_back(std::string(point.name()), std::move(how));
  return *this;
}

Flow::Builder& Flow::Builder::Masked(std::vector<std::string> json_pointers) {
  masked_.insert(masked_.end(), std::make_move_iterator(json_pointers.begin()),
                 std::make_move_iterator(json_pointers.end()));
  return *this;
}

Result<std::shared_ptr<const Flow>> Flow::Builder::Build() {
  auto bad = [this](const std::string& why) {
    return Status::InvalidArgument(fmt::format("flow '{}': {}", name_, why));
  };
  if (name_.empty() || name_.size() > 100) return bad("name must have 1 to 100 characters");
  std::shared_ptr<Flow> flow(new Flow());
  flow->name_ = name_;
  if (std::string why = KeySourceProblem(key_source_); !why.empty()) return bad(why);
  flow->key_source_ = key_source_;
  std::set<std::string> phases;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (!ValidPointName(n.point)) return bad(fmt::format("invalid recovery point name '{}'", n.point));
    if (n.point == kFinished.name()) return bad("'finished' is terminal and cannot own a phase");
    if (!flow->by_point_.emplace(n.point, i).second)
      return bad(fmt::format("recovery point '{}' owns two phases", n.point));
    if (n.phase.empty() || !phases.insert(n.phase).second)
      return bad(fmt::format("phase name '{}' empty or used twice", n.phase));
    if (n.atomic == nullptr && n.foreign == nullptr) return bad(fmt::format("phase '{}' has no function", n.phase));
    if (n.targets.empty()) return bad(fmt::format("phase '{}' declares no next recovery point", n.phase));
    if (n.kind == PhaseKind::kForeign && n.timeout.count() <= 0) {
      return bad(fmt::format("foreign phase '{}' needs a positive timeout", n.phase));
    }
    if (n.kind == PhaseKind::kForeign && n.key_retention.count() <= 0) {
      return bad(fmt::format("foreign phase '{}' needs a positive provider key retention", n.phase));
    }
  }
  if (flow->by_point_.find(kStarted.name()) == flow->by_point_.end())
    return bad("no phase at the entry point 'started'");
  for (const Node& n : nodes_) {
    for (const auto& t : n.targets) {
      if (t != kFinished.name() && flow->by_point_.find(t) == flow->by_point_.end()) {
        return bad(fmt::format("phase '{}' targets unknown recovery point '{}'", n.phase, t));
      }
    }
  }
  // Reachability from 'started'.
  std::set<std::string> seen{std::string(kStarted.name())};
  std::deque<std::string> todo{std::string(kStarted.name())};
  while (!todo.empty()) {
    const Node& n = nodes_[flow->by_point_.at(todo.front())];
    todo.pop_front();
    for (const auto& t : n.targets) {
      if (seen.insert(t).second && t != kFinished.name()) todo.push_back(t);
    }
  }
  for (const Node& n : nodes_) {
    if (!seen.count(n.point)) return bad(fmt::format("recovery point '{}' is unreachable from 'started'", n.point));
  }
  if (!seen.count(std::string(kFinished.name()))) return bad("'finished' is unreachable: no phase responds");
  if (std::string why = OlderPointsProblem(older_, flow->by_point_); !why.empty()) return bad(why);
  for (const auto& [point, how] : older_) {
    flow->older_.emplace(point, how.resume_at());
    if (std::find(renamed_.begin(), renamed_.end(), point) != renamed_.end()) {
      flow->renamed_.emplace(point, how.resume_at());
    }
  }
  if (std::string why = MaskedProblem(masked_); !why.empty()) return bad(why);
  flow->masked_ = masked_;  // not in Shape(): masking changes no key's path
  flow->effect_free_ = EffectFreePoints(nodes_, flow->by_point_);
  auto version = FingerprintJson(Shape(name_, key_source_, nodes_).dump());
  if (!version) return version.error();
  flow->version_ = version->sha256_hex.substr(0, 16);
  flow->nodes_ = std::move(nodes_);
  nodes_.clear();
  return std::shared_ptr<const Flow>(std::move(flow));
}

const Flow::Node* Flow::Find(std::string_view point) const {
  auto it = by_point_.find(point);
  return it == by_point_.end() ? nullptr : &nodes_[it->second];
}

bool Flow::Declares(std::string_view from, std::string_view to) const {
  const Node* n = Find(from);
  if (n == nullptr) return false;
  for (const auto& t : n->targets) {
    if (t == to) return true;
  }
  return false;
}

std::chrono::milliseconds Flow::LongestForeignTimeout() const {
  std::chrono::milliseconds longest{0};
  for (const auto& n : nodes_) longest = std::max(longest, n.timeout);
  return longest;
}

std::chrono::seconds Flow::ShortestKeyRetention() const {
  auto shortest = std::chrono::seconds::max();
  for (const auto& n : nodes_) {
    if (n.kind == PhaseKind::kForeign) shortest = std::min(shortest, n.key_retention);
  }
  return shortest;
}

std::string Flow::ToDot() const {
  std::string dot = fmt::format("digraph \"{}\" {{\n  rankdir=LR;\n", name_);
  dot += "  \"finished\" [shape=doublecircle];\n";
  for (const auto& n : nodes_) {
    dot += fmt::format("  \"{}\" [shape={}, label=\"{}\\n({} {})\"];\n", n.point,
                       n.kind == PhaseKind::kAtomic ? "box" : "ellipse", n.point,
                       n.kind == PhaseKind::kAtomic ? "atomic" : "foreign", n.phase);
  }
  for (const auto& n : nodes_) {
    for (const auto& t : n.targets) dot += fmt::format("  \"{}\" -> \"{}\";\n", n.point, t);
  }
  dot += "}\n";
  return dot;
}

PointResolution Flow::Resolve(std::string_view point) const {
  PointResolution r;
  if (point == kFinished.name() || by_point_.count(point) != 0) {
    r.kind = PointResolution::Kind::kCurrent;
  } else if (auto it = older_.find(point); it != older_.end()) {
    r.kind = it->second.empty() ? PointResolution::Kind::kForOperator : PointResolution::Kind::kMapped;
    r.resume_at = it->second;
  }
  return r;
}

bool Flow::BeforeAnyForeignPhase(std::string_view point) const { return effect_free_.count(point) != 0; }

std::vector<std::string> Flow::KnownPoints() const {
  std::vector<std::string> out{std::string(kFinished.name())};
  for (const auto& n : nodes_) out.push_back(n.point);
  for (const auto& [point, resume_at] : older_) out.push_back(point);
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json Flow::Describe() const {
  nlohmann::json points = nlohmann::json::array({std::string(kFinished.name())});
  for (const auto& n : nodes_) points.push_back(n.point);
  nlohmann::json renamed = nlohmann::json::object();
  nlohmann::json retired = nlohmann::json::object();
  for (const auto& [point, resume_at] : older_) {
    if (renamed_.count(point) != 0) {
      renamed[point] = resume_at;
    } else {
      retired[point] = resume_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(resume_at);
    }
  }
  nlohmann::json foreign = nlohmann::json::array();
  for (const auto& n : nodes_) {
    if (n.kind == PhaseKind::kForeign) foreign.push_back(n.phase);
  }
  return {{"name", name_},      {"version", version_}, {"points", points},         {"renamed", renamed},
          {"retired", retired}, {"masked", masked_},   {"foreign_phases", foreign}};
}

}  // namespace phasekey
