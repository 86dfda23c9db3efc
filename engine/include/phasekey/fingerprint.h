// Request fingerprints: the RFC 8785 (JCS) canonical form of a JSON body and
// its SHA-256.
//
// Two bodies that differ only in member order, insignificant whitespace,
// string escaping (\u0041 vs A) or number spelling (1, 1.0, 1e0) have the same
// canonical form and therefore the same fingerprint. A retried request whose
// fingerprint differs from the stored one is a different request reusing the
// key.
//
// Input rules (I-JSON, RFC 7493, as RFC 8785 section 3.1 requires). The input
// is refused with Status::InvalidArgument, and a one-line message saying why,
// when it:
//   - is not well-formed JSON (RFC 8259), including trailing data after the
//     top-level value; a leading UTF-8 byte order mark is skipped;
//   - contains bytes that are not well-formed UTF-8;
//   - contains a lone surrogate escape (\ud800 without a low surrogate);
//   - has an object with two members of the same name (compared after
//     unescaping, so "a" and "\u0061" are duplicates);
//   - has a number whose magnitude overflows an IEEE 754 double (1e400);
//   - nests arrays and objects deeper than the configured limit.
// Noncharacters such as U+FFFF are accepted and kept as is: RFC 8785 only
// requires lone surrogates to be rejected.
//
// Numbers. Every number is treated as the IEEE 754 double nearest to its
// decimal text (correctly rounded) and written in ECMAScript
// Number.prototype.toString form. Consequences a caller must know:
//   - 1, 1.0, 1e0 and 10e-1 all become "1"; -0 becomes "0";
//   - integers beyond 2^53 lose precision: 9007199254740993 becomes
//     "9007199254740992", so two such ids that differ only in the low digits
//     fingerprint the same. Clients should send large ids as strings;
//   - a magnitude below the smallest subnormal (1e-400) rounds to "0".
//
// All functions here are thread-safe and never throw (except std::bad_alloc).
#ifndef PHASEKEY_FINGERPRINT_H_
#define PHASEKEY_FINGERPRINT_H_

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "phasekey/status.h"

namespace phasekey {

// The default and largest allowed nesting depth of arrays and objects. A
// top-level scalar has depth 0, "[]" and "{}" depth 1, "[[1]]" depth 2.
// Request bodies nest a handful of levels; 128 leaves room for any real
// payload while bounding the work a hostile body can cause.
inline constexpr int kMaxNestingDepth = 128;

// Limits of CanonicalizeJson() and FingerprintJson().
struct CanonicalizeOptions {
  // Input nesting deeper than this is refused. Must be in
  // [1, kMaxNestingDepth]; any other value makes every call fail with
  // InvalidArgument.
  int max_nesting_depth = kMaxNestingDepth;
};

// Parses `body` (UTF-8 JSON text) and returns its RFC 8785 canonical form:
// UTF-8, no whitespace, object members sorted recursively by the UTF-16 code
// units of their unescaped names, strings escaped per RFC 8785 section
// 3.2.2.2, numbers as described above. Returns InvalidArgument if `body`
// breaks one of the input rules above.
Result<std::string> CanonicalizeJson(std::string_view body, const CanonicalizeOptions& options = {});

// A request fingerprint.
struct Fingerprint {
  std::string canonical;   // CanonicalizeJson(body)
  std::string sha256_hex;  // SHA-256 of `canonical`, 64 lowercase hex digits
};

// Canonicalizes `body` and hashes the result. Returns InvalidArgument on the
// same inputs as CanonicalizeJson, and Terminal if OpenSSL fails to hash.
Result<Fingerprint> FingerprintJson(std::string_view body, const CanonicalizeOptions& options = {});

// A request body canonicalized and hashed once, its canonical form parsed
// on demand: all the runner needs of a body, made once and shared by every
// reader of one request (a route that validates it, HttpHandler, the runner
// and its phases) instead of each parsing the bytes again. Immutable once
// made, except that document() fills itself in on its first call;
// document() is thread-safe. Held as std::shared_ptr<const CanonicalBody>.
class CanonicalBody {
 public:
  // FingerprintJson(body, options) kept in a CanonicalBody; the same errors.
  static Result<std::shared_ptr<const CanonicalBody>> Of(std::string_view body,
                                                         const CanonicalizeOptions& options = {});

  // Shared, never copied: every reader holds the same one.
  CanonicalBody(const CanonicalBody&) = delete;
  // Shared, never assigned.
  CanonicalBody& operator=(const CanonicalBody&) = delete;

  // The canonical text and its SHA-256, exactly as FingerprintJson(body).
  const Fingerprint& fingerprint() const { return fingerprint_; }
  // nlohmann::json::parse(fingerprint().canonical): the canonical form as a
  // document, what PhaseContext::request() shows phases (so a number is an
  // integer exactly when its canonical text is one: 1.0 reads as 1). Parsed
  // on the first call, by one thread if several call at once, and kept; the
  // reference lives as long as this object.
  const nlohmann::json& document() const;

 private:
  explicit CanonicalBody(Fingerprint fingerprint) : fingerprint_(std::move(fingerprint)) {}
  Fingerprint fingerprint_;
  mutable std::once_flag parsed_;
  mutable nlohmann::json document_;
};

}  // namespace phasekey

#endif  // PHASEKEY_FINGERPRINT_H_
