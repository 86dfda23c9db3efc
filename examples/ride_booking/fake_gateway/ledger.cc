#include "fake_gateway/ledger.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <system_error>

namespace fake_gateway {
namespace {

using nlohmann::json;

constexpr char kFileName[] = "ledger.jsonl";

std::string Errno(std::string_view what) { return fmt::format("{}: {}", what, std::strerror(errno)); }

json OptionalText(const std::optional<std::string>& text) { return text ? json(*text) : json(nullptr); }

std::optional<std::string> TextOrNull(const json& value) {
  if (value.is_null()) return std::nullopt;
  return value.get<std::string>();
}

json EncodeCharge(const ChargeRecord& charge) {
  json value = {{"id", charge.id},
                {"idempotency_key", OptionalText(charge.idempotency_key)},
                {"amount", charge.amount},
                {"currency", charge.currency},
                {"customer", charge.customer},
                {"description", OptionalText(charge.description)},
                {"created_at", charge.created_at}};
  if (!charge.metadata.empty()) value["metadata"] = charge.metadata;
  return value;
}

// Lines written before charges kept their metadata have none.
ChargeRecord DecodeCharge(const json& value) {
  std::map<std::string, std::string> metadata;
  if (value.contains("metadata")) metadata = value.at("metadata").get<std::map<std::string, std::string>>();
  return {value.at("id").get<std::string>(),       TextOrNull(value.at("idempotency_key")),
          value.at("amount").get<int64_t>(),       value.at("currency").get<std::string>(),
          value.at("customer").get<std::string>(), TextOrNull(value.at("description")),
          value.at("created_at").get<int64_t>(),   std::move(metadata)};
}

json EncodeRefund(const RefundRecord& refund) {
  return {
      {"id", refund.id}, {"charge", refund.charge_id}, {"amount", refund.amount}, {"created_at", refund.created_at}};
}

RefundRecord DecodeRefund(const json& value) {
  return {value.at("id").get<std::string>(), value.at("charge").get<std::string>(), value.at("amount").get<int64_t>(),
          value.at("created_at").get<int64_t>()};
}

std::string Dump(const json& line) { return line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

std::string EncodeLine(const LedgerEntry& entry) {
  if (entry.forget_responses_before_ms) {
    return Dump({{"forget_responses_before_ms", *entry.forget_responses_before_ms}});
  }
  json line = {{"key", OptionalText(entry.key)},
               {"params", entry.response.params},
               {"status", entry.response.status},
               {"body", entry.response.body},
               {"stored_at_ms", entry.response.stored_at_ms},
               {"charge", entry.charge ? EncodeCharge(*entry.charge) : json(nullptr)}};
  if (entry.refund) line["refund"] = EncodeRefund(*entry.refund);
  return Dump(line);
}

// Decodes one line; nullopt if it is not a well-formed entry.
std::optional<LedgerEntry> DecodeLine(std::string_view line) {
  try {
    json value = json::parse(line);
    LedgerEntry entry;
    if (value.contains("forget_responses_before_ms")) {
      entry.forget_responses_before_ms = value.at("forget_responses_before_ms").get<int64_t>();
      return entry;
    }
    entry.key = TextOrNull(value.at("key"));
    entry.response = {value.at("params").get<std::string>(), value.at("status").get<int>(),
                      value.at("body").get<std::string>(), value.at("stored_at_ms").get<int64_t>()};
    if (!value.at("charge").is_null()) entry.charge = DecodeCharge(value.at("charge"));
    if (value.contains("refund")) entry.refund = DecodeRefund(value.at("refund"));
    return entry;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

bool ReadAll(int fd, std::string* out, std::string* error) {
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = Errno("read ledger");
      return false;
    }
    if (n == 0) return true;
    out->append(buffer, static_cast<size_t>(n));
  }
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Makes the directory entry of a newly created file durable.
bool SyncDirectory(const std::filesystem::path& dir, std::string* error) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    *error = Errno(fmt::format("sync directory {}", dir.string()));
    if (fd >= 0) ::close(fd);
    return false;
  }
  ::close(fd);
  return true;
}

}  // namespace

std::unique_ptr<Ledger> Ledger::Open(const std::filesystem::path& dir, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    *error = fmt::format("create {}: {}", dir.string(), ec.message());
    return nullptr;
  }
  std::filesystem::path path = dir / kFileName;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = Errno(fmt::format("open {}", path.string()));
    return nullptr;
  }
  std::unique_ptr<Ledger> ledger(new Ledger(fd));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    *error = Errno(fmt::format("lock {} (is another fake_gateway using it?)", path.string()));
    return nullptr;
  }
  if (!SyncDirectory(dir, error) || !ledger->Replay(error)) return nullptr;
  return ledger;
}

Ledger::Ledger(int fd) : fd_(fd) {}

Ledger::~Ledger() { ::close(fd_); }

bool Ledger::Replay(std::string* error) {
  std::string text;
  if (!ReadAll(fd_, &text, error)) return false;
  size_t good_end = 0;  // end of the last line replayed
  size_t line_number = 0;
  while (good_end < text.size()) {
    ++line_number;
    size_t newline = text.find('\n', good_end);
    bool last = newline == std::string::npos || newline + 1 == text.size();
    std::optional<LedgerEntry> entry = newline == std::string::npos
                                           ? std::nullopt
                                           : DecodeLine(std::string_view(text).substr(good_end, newline - good_end));
    if (!entry && !last) {
      *error = fmt::format("ledger line {} is corrupt", line_number);
      return false;
    }
    if (!entry) break;  // a torn final append, never acknowledged
    Index(std::move(*entry));
    good_end = newline + 1;
  }
  if (good_end == text.size()) return true;
  std::fprintf(stderr, "fake_gateway: cutting off a torn last ledger line (%zu bytes)\n", text.size() - good_end);
  if (::ftruncate(fd_, static_cast<off_t>(good_end)) != 0 || ::fdatasync(fd_) != 0) {
    *error = Errno("truncate torn ledger line");
    return false;
  }
  return true;
}

void Ledger::Index(LedgerEntry entry) {
  if (entry.forget_responses_before_ms) {
    forgotten_before_ms_ = std::max(forgotten_before_ms_, *entry.forget_responses_before_ms);
  }
  if (entry.charge) {
    entry.charge->recorded_at_ms = entry.response.stored_at_ms;
    for (const auto& [name, value] : entry.charge->metadata) by_metadata_[{name, value}].push_back(charges_.size());
    by_id_[entry.charge->id] = charges_.size();
    charges_.push_back(std::move(*entry.charge));
  }
  if (entry.refund) {
    refunded_.insert(entry.refund->charge_id);
    refunds_.push_back(std::move(*entry.refund));
  }
  if (entry.key) responses_[*entry.key] = std::move(entry.response);
}

bool Ledger::Append(const LedgerEntry& entry, std::string* error) {
  return AppendLine(EncodeLine(entry), entry, error);
}

bool Ledger::ForgetResponsesBefore(int64_t before_ms, std::string* error) {
  LedgerEntry entry;
  entry.forget_responses_before_ms = before_ms;
  return AppendLine(EncodeLine(entry), entry, error);
}

bool Ledger::AppendLine(const std::string& line, const LedgerEntry& entry, std::string* error) {
  std::lock_guard file_lock(file_mu_);
  if (broken_) {
    *error = "the ledger is read-only after an earlier write failure";
    return false;
  }
  if (!WriteAll(fd_, line) || ::fdatasync(fd_) != 0) {
    broken_ = true;
    *error = Errno("append to ledger");
    return false;
  }
  std::lock_guard lock(mu_);
  Index(entry);
  return true;
}

std::optional<StoredResponse> Ledger::FindResponse(const std::string& key, int64_t not_before_ms) const {
  std::lock_guard lock(mu_);
  auto it = responses_.find(key);
  if (it == responses_.end()) return std::nullopt;
  if (it->second.stored_at_ms < std::max(not_before_ms, forgotten_before_ms_)) return std::nullopt;
  return it->second;
}

std::optional<StoredResponse> Ledger::LatestResponse(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = responses_.find(key);
  if (it == responses_.end()) return std::nullopt;
  return it->second;
}

std::vector<ChargeRecord> Ledger::Charges() const {
  std::lock_guard lock(mu_);
  return charges_;
}

std::vector<ChargeRecord> Ledger::ChargesWithMetadata(const std::string& name, const std::string& value) const {
  std::lock_guard lock(mu_);
  std::vector<ChargeRecord> out;
  const auto it = by_metadata_.find({name, value});
  if (it == by_metadata_.end()) return out;
  for (std::size_t i : it->second) out.push_back(charges_[i]);
  return out;
}

std::optional<ChargeRecord> Ledger::ChargeById(const std::string& id) const {
  std::lock_guard lock(mu_);
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return charges_[it->second];
}

bool Ledger::Refunded(const std::string& charge_id) const {
  std::lock_guard lock(mu_);
  return refunded_.contains(charge_id);
}

std::vector<RefundRecord> Ledger::Refunds() const {
  std::lock_guard lock(mu_);
  return refunds_;
}

}  // namespace fake_gateway
