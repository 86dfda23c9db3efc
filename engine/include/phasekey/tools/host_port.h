// HOST:PORT, as the binaries' --listen flags take it and their "listening on"
// lines print it: the one parser and the one formatter. Header-only, so a
// program that does not link phasekey (the example's fake gateway) can use
// it too.
//
// Accepted: "host:port" where host is a name or an IPv4 address, and
// "[v6]:port" for an IPv6 address (RFC 3986's bracketed form). The port is
// decimal digits only, 1..65535 (0 too with PortZero::kAllowed, for a
// listener: "any free port"). Refused: an empty host, a missing, empty,
// non-numeric or out-of-range port, an unclosed or empty bracket, and an
// IPv6 address without brackets ("::1:80" is ambiguous: a host with a colon
// must be bracketed).
#ifndef PHASEKEY_TOOLS_HOST_PORT_H_
#define PHASEKEY_TOOLS_HOST_PORT_H_

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace phasekey {

// A parsed HOST:PORT.
struct HostPort {
  std::string host;        // without brackets: "127.0.0.1", "localhost", "::1"
  std::uint16_t port = 0;  // 0 only when PortZero::kAllowed
};

// Whether port 0 is accepted: a listener takes it as "any free port"; an
// address to connect to never has it.
enum class PortZero { kRefused, kAllowed };

// `text` split into host and port as described above; nullopt when it is
// not of that form. Thread-safe.
inline std::optional<HostPort> ParseHostPort(std::string_view text, PortZero zero = PortZero::kRefused) {
  std::string_view host;
  std::string_view rest;
  if (text.starts_with('[')) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = text.substr(1, close - 1);
    rest = text.substr(close + 1);
    if (host.find_first_of("[]") != std::string_view::npos) return std::nullopt;
  } else {
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    host = text.substr(0, colon);
    rest = text.substr(colon);
    if (host.find_first_of("[]") != std::string_view::npos) return std::nullopt;
  }
  // `rest` must be ":" and the port; a second colon (an unbracketed IPv6
  // address) is not a digit, so the number check below refuses it.
  if (host.empty() || !rest.starts_with(':')) return std::nullopt;
  const std::string_view digits = rest.substr(1);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  std::uint16_t port = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  if (port == 0 && zero == PortZero::kRefused) return std::nullopt;
  return HostPort{std::string(host), port};
}

// "host:port", with an IPv6 address (a host containing ':') in brackets:
// the form ParseHostPort reads back.
inline std::string FormatHostPort(std::string_view host, std::uint16_t port) {
  std::string out;
  if (host.find(':') != std::string_view::npos) {
    out.append("[").append(host).append("]");
  } else {
    out.append(host);
  }
  return out.append(":").append(std::to_string(port));
}

}  // namespace phasekey

#endif  // PHASEKEY_TOOLS_HOST_PORT_H_
