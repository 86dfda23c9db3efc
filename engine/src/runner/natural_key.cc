#include "runner/natural_key.h"

#include <fmt/format.h>

#include <algorithm>

#include "runner/key_limits.h"

namespace phasekey::runner {
namespace {

Result<std::string> FromBody(const KeySource& source, const nlohmann::json& body) {
  const nlohmann::json::json_pointer pointer(source.name());
  const std::string where = source.Describe();
  if (!body.is_object() || !body.contains(pointer)) return Status::InvalidArgument(where + " is missing");
  const nlohmann::json& value = body.at(pointer);
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer() || value.is_number_unsigned()) return value.dump();
  return Status::InvalidArgument(where + " must be a string or an integer");
}

Result<std::string> FromPath(const KeySource& source, const Request& request) {
  auto it = request.path_parameters.find(source.name());
  if (it == request.path_parameters.end()) return Status::InvalidArgument(source.Describe() + " is missing");
  return it->second;
}

}  // namespace

Result<std::string> NaturalKey(const Flow& flow, const Request& request, const nlohmann::json& body) {
  const KeySource& source = flow.key_source();
  if (!request.idempotency_key.empty()) {
    return Status::InvalidArgument(
        fmt::format("this operation is keyed by {}; send no Idempotency-Key", source.Describe()));
  }
  Result<std::string> value =
      source.kind() == KeySource::Kind::kBodyField ? FromBody(source, body) : FromPath(source, request);
  if (!value) return value;
  const std::size_t max = kMaxKeyCharacters - Utf8Characters(flow.name()) - 1;
  const std::size_t n = Utf8Characters(*value);
  if (n == 0 || n > max) {
    return Status::InvalidArgument(fmt::format("{} must have 1 to {} characters (has {})", source.Describe(), max, n));
  }
  if (std::any_of(value->begin(), value->end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; })) {
    return Status::InvalidArgument(source.Describe() + " must not hold control characters");
  }
  return flow.name() + ":" + *value;
}

}  // namespace phasekey::runner
