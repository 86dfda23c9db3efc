// `phasekey request [--journal PATH] [--intent NAME] [--header 'Name: value']...
//                   [--data BODY | --data-file F] [--deadline-s N] [--ca-file PEM] [-v]
//                   METHOD URL`
//
// Sends one intent through the client library and prints the final answer's
// body on stdout. With --journal and --intent, the intent is created once
// under NAME in the SQLite journal at PATH; running the same command again
// (after a crash, a SIGKILL, a deadline) resumes it with the same key, and a
// finished one prints its stored answer without sending anything. Without
// --intent every run is a new intent.
//
// Crash points (builds with PHASEKEY_CRASH_POINTS): "client.<step>" for each
// step of ClientOptions::on_step, e.g. PHASEKEY_CRASH_AT=client.answered.

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "phasekey/client/client.h"
#include "phasekey/crash_point.h"

namespace phasekey::cli {
namespace {

constexpr char kCommand[] = "request";
constexpr int kUsage = 2;
constexpr int kNoFinalAnswer = 3;

struct RequestArgs {
  std::string journal;
  std::string intent;
  std::vector<std::string> headers;
  std::vector<std::string> data;
  std::string data_file;
  std::string deadline_s;
  std::string ca_file;
  bool verbose = false;
  std::string method;
  std::string url;
};

client::Headers ParseHeaders(const std::vector<std::string>& lines) {
  client::Headers out;
  for (const std::string& line : lines) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos || colon == 0)
      Fail(kCommand, "--header wants 'Name: value', got '" + line + "'", kUsage);
    std::string value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
    out.emplace_back(line.substr(0, colon), value);
  }
  return out;
}

std::string ReadBody(const RequestArgs& args) {
  if (!args.data.empty() && !args.data_file.empty()) Fail(kCommand, "give --data or --data-file, not both", kUsage);
  if (args.data.size() > 1) Fail(kCommand, "give --data once", kUsage);
  if (!args.data.empty()) return args.data[0];
  if (args.data_file.empty()) return "";
  if (args.data_file == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  std::ifstream in(args.data_file, std::ios::binary);
  if (!in) Fail(kCommand, "cannot read --data-file " + args.data_file, kUsage);
  std::ostringstream body;
  body << in.rdbuf();
  return body.str();
}

void Run(const RequestArgs& args, const std::vector<std::string>& extra) {
  if (!extra.empty()) Fail(kCommand, "unexpected argument '" + extra[0] + "' (see --help)", kUsage);
  if (args.method.empty() || args.url.empty()) Fail(kCommand, "give METHOD and URL (see --help)", kUsage);
  if (!args.intent.empty() && args.journal.empty()) {
    Fail(kCommand, "--intent needs --journal: a named intent lives in a journal", kUsage);
  }
  client::ClientOptions options;
  if (!args.deadline_s.empty()) {
    double seconds = 0;
    try {
      std::size_t used = 0;
      seconds = std::stod(args.deadline_s, &used);
      if (used != args.deadline_s.size()) seconds = -1;
    } catch (const std::exception&) {
      seconds = -1;
    }
    if (!(seconds > 0)) Fail(kCommand, "--deadline-s wants a positive number of seconds", kUsage);
    options.retry.deadline = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  }
  options.ca_file = args.ca_file;
  options.async_threads = 1;
  options.on_step = []([[maybe_unused]] std::string_view step, const client::Intent&) {
    PHASEKEY_CRASH_POINT("client." + std::string(step));
  };
  const client::Request request{args.method, args.url, ParseHeaders(args.headers), ReadBody(args)};
  client::Answer answer;
  try {
    if (!args.journal.empty()) options.journal = client::OpenSqliteJournal(args.journal);
    client::Client http(options);
    const client::Intent intent =
        args.intent.empty() ? http.NewIntent(request) : http.IntentNamed(args.intent, request);
    answer = http.Send(intent);
  } catch (const client::JournalError& e) {
    Fail(kCommand, e.what(), kNoFinalAnswer);
  } catch (const std::invalid_argument& e) {
    Fail(kCommand, e.what(), kUsage);
  }
  if (args.verbose) {
    std::fprintf(stderr, "phasekey request: key %s, HTTP %d after %d attempt(s)%s%s\n", answer.key.c_str(),
                 answer.status, answer.attempts, answer.replayed ? ", replayed" : "",
                 answer.from_journal ? ", from the journal" : "");
  }
  if (answer.outcome == client::Outcome::kGaveUp) Fail(kCommand, answer.problem, kNoFinalAnswer);
  std::fwrite(answer.body.data(), 1, answer.body.size(), stdout);
  std::fflush(stdout);
  if (!answer.ok()) Fail(kCommand, "HTTP " + std::to_string(answer.status) + ": " + answer.problem, 1);
}

}  // namespace

void RegisterRequestCommand(CLI::App& app) {
  auto args = std::make_shared<RequestArgs>();
  CLI::App* sub = app.add_subcommand(
      kCommand,
      "send one request under an idempotency key (UUIDv7), retrying it until a final answer; prints the body. "
      "Exit 0 on 2xx, 1 on a final non-2xx, 2 on a usage error, 3 without a final answer (run it again)");
  sub->add_option("--journal", args->journal, "SQLite journal file: the intent is written here before it is sent");
  sub->add_option("--intent", args->intent,
                  "name of the intent in the journal: the same name resumes the same intent with the same key");
  sub->add_option("--header,-H", args->headers, "a request header, 'Name: value' (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--data,-d", args->data, "the request body")->allow_extra_args(false);
  sub->add_option("--data-file", args->data_file, "read the request body from a file ('-': stdin)");
  sub->add_option("--deadline-s", args->deadline_s, "give up after this many seconds (default 60)");
  sub->add_option("--ca-file", args->ca_file,
                  "https: trust the CA certificates in this PEM file instead of the system's trust store");
  sub->add_flag("--verbose,-v", args->verbose, "print the key, status and attempts on stderr");
  sub->add_option("method", args->method, "HTTP method, e.g. POST");
  sub->add_option("url", args->url, "http://host[:port]/path or https://host[:port]/path");
  sub->allow_extras();
  sub->callback([args, sub] { Run(*args, sub->remaining()); });
}

}  // namespace phasekey::cli
