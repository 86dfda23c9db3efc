// What the kernel says about a process's TCP connections, so a test can wait
// for the moment a child process has reached a server (and its request is
// there) instead of sleeping for a guess. IPv4 only, which is what the
// tests' loopback servers listen on. Reads /proc/<pid>/fd and asks the
// kernel's sock_diag netlink interface, which needs no privileges.
#ifndef PHASEKEY_TESTS_SUPPORT_TCP_PROBE_H_
#define PHASEKEY_TESTS_SUPPORT_TCP_PROBE_H_

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace phasekey::testing {

// One established IPv4 TCP connection end on this host.
struct TcpEnd {
  std::uint16_t local_port = 0;
  std::uint16_t remote_port = 0;
  ino_t inode = 0;                   // of its socket (as in /proc/<pid>/fd)
  std::uint64_t bytes_received = 0;  // payload bytes that have arrived at this end
};

// Every established IPv4 TCP connection end in our network namespace; empty
// when the kernel cannot be asked.
std::vector<TcpEnd> EstablishedTcpEnds();

// Whether process `pid` holds an established TCP connection to port `port`.
bool ConnectedTo(pid_t pid, std::uint16_t port);

// Whether the server on `port` has received at least one byte over a
// connection that process `pid` holds to it: the bytes are at the server
// (in its socket, read or not), whatever happens to `pid` now.
bool DeliveredTo(pid_t pid, std::uint16_t port);

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_TCP_PROBE_H_
