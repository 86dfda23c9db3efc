#include "fake_gateway/form.h"

#include <boost/url/encode.hpp>
#include <boost/url/encoding_opts.hpp>
#include <boost/url/pct_string_view.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <cstdint>

namespace fake_gateway {
namespace {

// '+' means a space, as in every form body.
boost::urls::encoding_opts FormOptions() {
  boost::urls::encoding_opts options;
  options.space_as_plus = true;
  return options;
}

// Decodes one name or value; nullopt on a malformed escape.
std::optional<std::string> Decode(std::string_view text) {
  auto escaped = boost::urls::make_pct_string_view(text);
  if (!escaped) return std::nullopt;
  return escaped->decode(FormOptions());
}

}  // namespace

std::optional<FormFields> ParseForm(std::string_view body) {
  FormFields fields;
  while (!body.empty()) {
    size_t amp = body.find('&');
    std::string_view pair = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view() : body.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::optional<std::string> name = Decode(pair.substr(0, eq));
    std::optional<std::string> value = Decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!name || !value) return std::nullopt;
    fields.emplace_back(std::move(*name), std::move(*value));
  }
  return fields;
}

std::string FormEncode(std::string_view text) {
  return boost::urls::encode(text, boost::urls::unreserved_chars, FormOptions());
}

bool IsValidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    unsigned char lead = byte(i);
    size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > text.size()) return false;
    uint32_t code = length == 1 ? lead : lead & (0x7F >> length);
    for (size_t k = 1; k < length; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) return false;
      code = (code << 6) | (byte(i + k) & 0x3F);
    }
    static constexpr uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    bool surrogate = code >= 0xD800 && code <= 0xDFFF;
    if (code < kMinimum[length] || code > 0x10FFFF || surrogate) return false;
    i += length;
  }
  return true;
}

}  // namespace fake_gateway
