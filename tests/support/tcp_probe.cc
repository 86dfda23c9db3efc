#include "support/tcp_probe.h"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>

namespace phasekey::testing {
namespace {

constexpr int kTcpEstablished = 1;  // TCP_ESTABLISHED in the kernel's numbering

// The inodes of the sockets process `pid` has open (empty if it is gone).
std::set<ino_t> SocketInodes(pid_t pid) {
  std::set<ino_t> inodes;
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code link_ec;
    const std::string target = std::filesystem::read_symlink(fd.path(), link_ec).string();
    if (!link_ec && target.starts_with("socket:[") && target.ends_with("]")) {
      inodes.insert(static_cast<ino_t>(std::stoull(target.substr(8, target.size() - 9))));
    }
  }
  return inodes;
}

// One inet_diag answer as a TcpEnd (bytes_received from its tcp_info, 0 if
// the kernel sent none).
TcpEnd ParseEnd(const nlmsghdr* h) {
  const auto* msg = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
  TcpEnd end;
  end.local_port = ntohs(msg->id.idiag_sport);
  end.remote_port = ntohs(msg->id.idiag_dport);
  end.inode = msg->idiag_inode;
  int left = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof *msg));
  for (auto* a = reinterpret_cast<const rtattr*>(msg + 1); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
    if (a->rta_type != INET_DIAG_INFO) continue;
    tcp_info info{};
    std::memcpy(&info, RTA_DATA(a), std::min<std::size_t>(RTA_PAYLOAD(a), sizeof info));
    end.bytes_received = info.tcpi_bytes_received;
  }
  return end;
}

// Sends the dump request for established IPv4 TCP sockets with their
// tcp_info; false on failure.
bool RequestDump(int fd) {
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  message.request.sdiag_family = AF_INET;
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = 1u << kTcpEstablished;
  message.request.idiag_ext = 1u << (INET_DIAG_INFO - 1);
  return ::send(fd, &message, sizeof message, 0) == static_cast<ssize_t>(sizeof message);
}

// Reads the dump's answers into *ends; false if it failed before its end.
bool ReadDump(int fd, std::vector<TcpEnd>* ends) {
  alignas(nlmsghdr) char buffer[32768];
  while (true) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return false;
    for (auto* h = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_type == NLMSG_DONE) return true;
      if (h->nlmsg_type == NLMSG_ERROR) return false;
      ends->push_back(ParseEnd(h));
    }
  }
}

// The ends of the established connections that `pid` holds to `port`.
std::vector<TcpEnd> EndsOf(pid_t pid, std::uint16_t port, const std::vector<TcpEnd>& all) {
  const std::set<ino_t> inodes = SocketInodes(pid);
  std::vector<TcpEnd> mine;
  for (const TcpEnd& e : all) {
    if (e.remote_port == port && inodes.contains(e.inode)) mine.push_back(e);
  }
  return mine;
}

}  // namespace

std::vector<TcpEnd> EstablishedTcpEnds() {
  std::vector<TcpEnd> ends;
  const int fd = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) return ends;
  if (!RequestDump(fd) || !ReadDump(fd, &ends)) ends.clear();
  ::close(fd);
  return ends;
}

bool ConnectedTo(pid_t pid, std::uint16_t port) { return !EndsOf(pid, port, EstablishedTcpEnds()).empty(); }

bool DeliveredTo(pid_t pid, std::uint16_t port) {
  const std::vector<TcpEnd> all = EstablishedTcpEnds();
  for (const TcpEnd& client : EndsOf(pid, port, all)) {
    for (const TcpEnd& server : all) {
      if (server.local_port == port && server.remote_port == client.local_port && server.bytes_received > 0) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace phasekey::testing
