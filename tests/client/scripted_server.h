// The client's tests' loopback server: support/loopback_http_server.h with
// the script called with each request's index, and answers that close the
// connection (Respond) unless a test keeps it open (testing::Answer), so
// that each attempt opens a connection of its own as before the pool.
#ifndef PHASEKEY_TESTS_CLIENT_SCRIPTED_SERVER_H_
#define PHASEKEY_TESTS_CLIENT_SCRIPTED_SERVER_H_

#include <functional>
#include <string>
#include <utility>

#include "support/loopback_http_server.h"

namespace phasekey::testing {

using SeenRequest = LoopbackRequest;
using ScriptedAnswer = LoopbackAnswer;

// "HTTP/1.1 <status> X" with `headers`, the body and "Connection: close";
// the server closes the connection after it.
inline ScriptedAnswer Respond(int status, const std::string& body = "{}", const std::string& headers = "") {
  return AnswerAndClose(status, body, headers);
}

class ScriptedServer : public LoopbackHttpServer {
 public:
  using Script = std::function<ScriptedAnswer(const SeenRequest&, int index)>;

  explicit ScriptedServer(Script script)
      : LoopbackHttpServer([script = std::move(script)](const SeenRequest& r) { return script(r, r.index); }) {}

  std::string Url(const std::string& path = "/op") const { return LoopbackHttpServer::Url(path); }
};

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_CLIENT_SCRIPTED_SERVER_H_
