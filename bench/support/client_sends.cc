#include "support/client_sends.h"

#include <arpa/inet.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>
#include <pqxx/pqxx>

namespace phasekey::bench {

std::uint16_t ServerPort(const std::string& url) {
  pqxx::connection conn(url);
  const char* port = conn.port();
  const char* host = conn.hostname();
  if (port == nullptr || host == nullptr || host[0] == '/' || host[0] == '\0') return 0;
  return static_cast<std::uint16_t>(std::atoi(port));
}

std::int64_t DataSegmentsSentTo(std::uint16_t port) {
  std::int64_t sum = 0;
  bool any = false;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const int fd = std::atoi(e.path().filename().c_str());
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    std::uint16_t peer_port = 0;
    if (peer.ss_family == AF_INET) {
      peer_port = ntohs(reinterpret_cast<const sockaddr_in*>(&peer)->sin_port);
    } else if (peer.ss_family == AF_INET6) {
      peer_port = ntohs(reinterpret_cast<const sockaddr_in6*>(&peer)->sin6_port);
    }
    if (peer_port != port) continue;
    tcp_info info{};
    socklen_t info_len = sizeof info;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_len) != 0) continue;
    if (info_len < offsetof(tcp_info, tcpi_data_segs_out) + sizeof info.tcpi_data_segs_out) return -1;
    sum += info.tcpi_data_segs_out;
    any = true;
  }
  return any ? sum : 0;
}

}  // namespace phasekey::bench
