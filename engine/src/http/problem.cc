#include "phasekey/http.h"

#include <nlohmann/json.hpp>

namespace phasekey {

HttpResponse ProblemResponse(const Problem& problem, std::string_view docs_url) {
  std::string type(docs_url);
  type += '#';
  type += problem.slug;
  nlohmann::ordered_json body = {
      {"type", type},
      {"title", problem.title},
      {"status", problem.status},
      {"detail", problem.detail},
  };
  HttpResponse res;
  res.status = problem.status;
  res.headers.Add("Content-Type", "application/problem+json");
  res.headers.Add("Link", "<" + std::string(docs_url) + ">; rel=\"describedby\"");
  // replace: a detail built from client input must never make us throw.
  res.body = body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return res;
}

}  // namespace phasekey
