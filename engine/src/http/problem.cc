// RFC 9457 problems: ProblemJsonResponse (flow.h), the one place a problem
// body and its Content-Type are made, and ProblemResponse (http.h) on it.
#include <nlohmann/json.hpp>

#include "phasekey/flow.h"
#include "phasekey/http.h"

namespace phasekey {

Response ProblemJsonResponse(int status, std::string_view type, std::string_view title, const nlohmann::json& extra) {
  nlohmann::ordered_json body = {{"type", type}, {"title", title}, {"status", status}};
  if (extra.is_object()) {
    for (const auto& [name, value] : extra.items()) {
      if (!body.contains(name)) body[name] = nlohmann::ordered_json(value);
    }
  }
  // replace: a detail built from client input must never make us throw.
  return Response{status,
                  {{"Content-Type", "application/problem+json"}},
                  body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)};
}

Response ProblemResponse(const Problem& problem, std::string_view docs_url) {
  Response res = ProblemJsonResponse(problem.status, std::string(docs_url) + "#" + problem.slug, problem.title,
                                     {{"detail", problem.detail}});
  res.headers.Add("Link", "<" + std::string(docs_url) + ">; rel=\"describedby\"");
  return res;
}

}  // namespace phasekey
