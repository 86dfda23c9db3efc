#include "seal/keyring.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "util/hex.h"

namespace phasekey::seal {
namespace {

// The key `hex` spells (64 hex digits), or false.
bool ParseKey(std::string_view hex, Key* key) {
  const std::string bytes = util::HexDecode(hex);  // stops at the first pair that is not hex
  if (hex.size() != key->size() * 2 || bytes.size() != key->size()) return false;
  std::copy(bytes.begin(), bytes.end(), key->begin());
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Result<Keyring> ReadFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::FailedPrecondition(fmt::format("kek_file {}: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return Status::FailedPrecondition(fmt::format("kek_file {}: not a regular file", path));
  if ((st.st_mode & 077) != 0) {
    return Status::FailedPrecondition(
        fmt::format("kek_file {}: mode {:04o} lets others read it; chmod 600 it", path, st.st_mode & 07777));
  }
  std::ifstream in(path);
  if (!in) return Status::FailedPrecondition(fmt::format("kek_file {}: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return ParseKeyring(text.str(), "kek_file " + path);
}

Result<Keyring> RunCommand(const std::string& command) {
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return Status::FailedPrecondition(fmt::format("kek_command: {}", std::strerror(errno)));
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) text.append(buf, n);
  const int status = ::pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::FailedPrecondition(
        fmt::format("kek_command failed (exit status {})", WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  }
  return ParseKeyring(text, "kek_command");
}

}  // namespace

Result<Keyring> ParseKeyring(std::string_view text, const std::string& origin) {
  static const std::regex kId("[A-Za-z0-9._-]{1,64}");
  Keyring ring;
  int line_no = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = Trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const std::size_t space = line.find_first_of(" \t");
    const std::string id(line.substr(0, space));
    Key key{};
    if (space == std::string_view::npos || !std::regex_match(id, kId) || !ParseKey(Trim(line.substr(space)), &key)) {
      return Status::InvalidArgument(fmt::format(
          "{} line {}: expected \"<id> <64 hex digits>\" (id: 1 to 64 of [A-Za-z0-9._-])", origin, line_no));
    }
    if (!ring.keys.emplace(id, key).second) {
      return Status::InvalidArgument(fmt::format("{} line {}: the id '{}' appears twice", origin, line_no, id));
    }
    if (ring.current.empty()) ring.current = id;
  }
  if (ring.current.empty()) return Status::InvalidArgument(origin + ": no key-encryption key in it");
  return ring;
}

Result<Keyring> LoadKeyring(const EncryptionOptions& options) {
  if (options.kek_file.empty() == options.kek_command.empty()) {
    return Status::InvalidArgument("encryption: set exactly one of kek_file and kek_command");
  }
  return options.kek_file.empty() ? RunCommand(options.kek_command) : ReadFile(options.kek_file);
}

}  // namespace phasekey::seal
