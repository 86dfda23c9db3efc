// PLACEHOLDER while the chaos demo is being written; replaced wholesale.
#include "chaos.h"

#include <cstdio>

namespace ride_booking {
void AddChaosFlags(CLI::App*, ChaosFlags*) {}
int RunChaos(const ChaosFlags&) {
  std::fprintf(stderr, "ride_booking chaos: not built yet\n");
  return 1;
}
}  // namespace ride_booking
