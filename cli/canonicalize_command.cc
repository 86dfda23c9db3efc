// `phasekey canonicalize`: prints the RFC 8785 canonical form (or its
// SHA-256) of one JSON document read from stdin.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "phasekey/fingerprint.h"

namespace phasekey::cli {
namespace {

constexpr char kCommand[] = "canonicalize";
constexpr int kExitInvalidInput = 2;

// Returns all of stdin, byte for byte. Exits with status 1 on a read error.
std::string ReadStdin() {
  std::string input;
  char buf[1 << 16];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), stdin)) > 0) input.append(buf, n);
  if (std::ferror(stdin)) Fail(kCommand, "cannot read stdin");
  return input;
}

// Writes `text` to stdout and flushes. Exits with status 1 on a write error.
void WriteStdout(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    Fail(kCommand, "cannot write stdout");
  }
}

void RunCanonicalize(bool sha256) {
  Result<Fingerprint> fingerprint = FingerprintJson(ReadStdin());
  if (!fingerprint) {
    const Status& error = fingerprint.error();
    if (error.code() == StatusCode::kInvalidArgument) {
      Fail(kCommand, error.message(), kExitInvalidInput);
    }
    Fail(kCommand, error.ToString());
  }
  WriteStdout(sha256 ? fingerprint->sha256_hex + "\n" : fingerprint->canonical);
}

}  // namespace

void RegisterCanonicalizeCommand(CLI::App& app) {
  auto sha256 = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(kCommand, "print the RFC 8785 (JCS) canonical form of the JSON on stdin");
  cmd->add_flag("--sha256", *sha256,
                "print the request fingerprint (SHA-256 of the canonical "
                "form, 64 lowercase hex digits) instead");
  cmd->footer(
      "Reads one JSON document from stdin. Writes its canonical form with no "
      "trailing newline, or with --sha256 the hex digest followed by a "
      "newline. Numbers are read as IEEE 754 doubles, so integers beyond 2^53 "
      "are rounded.\nExit status: 0 on success; 2 if the input is not "
      "I-JSON (malformed, invalid UTF-8, lone surrogate, duplicate member "
      "name, number overflow, nesting deeper than " +
      std::to_string(kMaxNestingDepth) + "), with one line on stderr saying why; 1 on an I/O error.");
  cmd->callback([sha256] { RunCanonicalize(*sha256); });
}

}  // namespace phasekey::cli
