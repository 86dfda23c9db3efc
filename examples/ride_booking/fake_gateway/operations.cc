#include "fake_gateway/operations.h"

#include <memory>

#include <nlohmann/json.hpp>

namespace fake_gateway {

std::unique_ptr<OperationJournal> OperationJournal::Open(const std::filesystem::path& dir) {
  std::FILE* file = std::fopen((dir / "operations.jsonl").c_str(), "a");
  if (file == nullptr) return nullptr;
  return std::unique_ptr<OperationJournal>(new OperationJournal(file));
}

OperationJournal::~OperationJournal() { std::fclose(file_); }

void OperationJournal::Record(const Operation& op) {
  nlohmann::json line = {{"at_ms", op.at_ms},   {"op", op.op},          {"key", nullptr},
                         {"status", op.status}, {"charge_id", nullptr}, {"dropped", op.dropped}};
  if (op.key) line["key"] = *op.key;
  if (op.charge_id) line["charge_id"] = *op.charge_id;
  const std::string text = line.dump() + "\n";
  std::lock_guard lock(mu_);
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fflush(file_);
}

}  // namespace fake_gateway
