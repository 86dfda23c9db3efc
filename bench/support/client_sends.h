// How many times this process has sent data to the database server: the
// kernel's count of data segments sent (TCP_INFO tcpi_data_segs_out) summed
// over this process's TCP connections to one port. libpq sets TCP_NODELAY
// and writes each message batch with one send, so a client that waits for
// each answer before sending again makes one round trip per send.
#ifndef PHASEKEY_BENCH_SUPPORT_CLIENT_SENDS_H_
#define PHASEKEY_BENCH_SUPPORT_CLIENT_SENDS_H_

#include <cstdint>
#include <string>

namespace phasekey::bench {

// The TCP port of the server at `url` (0 when it is reached over a Unix
// socket). Throws pqxx exceptions.
std::uint16_t ServerPort(const std::string& url);

// Data segments sent so far on this process's open TCP connections to
// 127.0.0.1 or ::1 port `port`; -1 when the kernel does not say.
std::int64_t DataSegmentsSentTo(std::uint16_t port);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_CLIENT_SENDS_H_
