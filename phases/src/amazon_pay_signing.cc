#include "phasekey/phases/amazon_pay_signing.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "answer_util.h"
#include "key_hashing.h"

namespace phasekey::phases {
namespace {

struct FreeKey {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, FreeKey>;
struct FreeMdCtx {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return std::string(s);
}

// Every path segment percent-encoded, the slashes kept.
std::string CanonicalUri(std::string_view path) {
  if (path.empty()) return "/";
  std::string out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    out += internal::PercentEncode(path.substr(start, slash - start));
    if (slash == path.size()) break;
    out += '/';
    start = slash + 1;
  }
  return out;
}

// The query's name=value pairs sorted by name, then value (as sent: the
// adapter builds them already encoded).
std::string CanonicalQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  while (!query.empty()) {
    const std::size_t amp = std::min(query.find('&'), query.size());
    const std::string_view pair = query.substr(0, amp);
    const std::size_t eq = std::min(pair.find('='), pair.size());
    if (!pair.empty()) {
      pairs.emplace_back(pair.substr(0, eq), eq < pair.size() ? pair.substr(eq + 1) : std::string_view());
    }
    query.remove_prefix(std::min(amp + 1, query.size()));
  }
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [name, value] : pairs) {
    if (!out.empty()) out += '&';
    out += name + "=" + value;
  }
  return out;
}

// The headers to sign: lowercase name -> trimmed value, sorted.
std::map<std::string, std::string> SignedHeaderMap(const ProviderRequest& r) {
  std::map<std::string, std::string> headers;
  for (const auto& [name, value] : r.headers) {
    std::string lower = Lower(name);
    if (lower != "authorization") headers.emplace(std::move(lower), Trim(value));
  }
  if (!r.content_type.empty()) headers.emplace("content-type", Trim(r.content_type));
  return headers;
}

std::string SignedHeaderNames(const std::map<std::string, std::string>& headers) {
  std::string out;
  for (const auto& [name, value] : headers) {
    if (!out.empty()) out += ';';
    out += name;
  }
  return out;
}

std::string PayDate(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &utc);
  return buf;
}

Result<std::string> SignPss(EVP_PKEY* key, int salt_length, const std::string& message) {
  std::unique_ptr<EVP_MD_CTX, FreeMdCtx> ctx(EVP_MD_CTX_new());
  EVP_PKEY_CTX* pctx = nullptr;  // owned by ctx
  std::size_t n = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), &pctx, EVP_sha256(), nullptr, key) != 1 ||
      EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
      EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, salt_length) != 1 ||
      EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &n, reinterpret_cast<const unsigned char*>(message.data()), message.size()) !=
          1) {
    return Status::Terminal("amazon_pay signing: RSASSA-PSS setup failed");
  }
  std::string signature(n, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &n,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
    return Status::Terminal("amazon_pay signing: RSASSA-PSS failed");
  }
  signature.resize(n);
  return signature;
}

void AddUnlessPresent(ProviderRequest* r, const char* name, std::string value) {
  if (r->FindHeader(name) == nullptr) r->headers.emplace_back(name, std::move(value));
}

}  // namespace

const char* AmazonPayAlgorithmName(AmazonPayAlgorithm algorithm) {
  return algorithm == AmazonPayAlgorithm::kRsassaPss ? "AMZN-PAY-RSASSA-PSS" : "AMZN-PAY-RSASSA-PSS-V2";
}

std::string AmazonPayCanonicalRequest(const ProviderRequest& request, const std::string& path_prefix) {
  const std::string target = path_prefix + request.path;
  const std::size_t question = std::min(target.find('?'), target.size());
  const std::string_view query =
      question < target.size() ? std::string_view(target).substr(question + 1) : std::string_view();
  const auto headers = SignedHeaderMap(request);
  std::string out = request.method + "\n" + CanonicalUri(std::string_view(target).substr(0, question)) + "\n" +
                    CanonicalQuery(query) + "\n";
  for (const auto& [name, value] : headers) out += name + ":" + value + "\n";
  out += "\n" + SignedHeaderNames(headers) + "\n" + Sha256Hex(request.body);
  return out;
}

std::string AmazonPayStringToSign(AmazonPayAlgorithm algorithm, const std::string& canonical_request) {
  return std::string(AmazonPayAlgorithmName(algorithm)) + "\n" + Sha256Hex(canonical_request);
}

Result<std::function<Status(ProviderRequest*)>> NewAmazonPaySigner(AmazonPaySigningOptions options) {
  if (options.public_key_id.empty() || options.region.empty() || options.host.empty()) {
    return Status::InvalidArgument("amazon_pay signing needs public_key_id, region and host");
  }
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(options.private_key_pem.data(), static_cast<int>(options.private_key_pem.size())), BIO_free);
  KeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key || EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) {
    return Status::InvalidArgument("amazon_pay signing: private_key_pem is not an RSA private key in PEM");
  }
  if (!options.clock) options.clock = [] { return std::chrono::system_clock::now(); };
  auto shared_key = std::shared_ptr<EVP_PKEY>(key.release(), FreeKey{});
  return std::function<Status(ProviderRequest*)>([options, shared_key](ProviderRequest* r) -> Status {
    AddUnlessPresent(r, "accept", "application/json");
    AddUnlessPresent(r, "x-amz-pay-date", PayDate(options.clock()));
    AddUnlessPresent(r, "x-amz-pay-host", options.host);
    AddUnlessPresent(r, "x-amz-pay-region", options.region);
    const std::string canonical = AmazonPayCanonicalRequest(*r, options.path_prefix);
    const int salt = options.algorithm == AmazonPayAlgorithm::kRsassaPss ? 20 : 32;
    Result<std::string> signature =
        SignPss(shared_key.get(), salt, AmazonPayStringToSign(options.algorithm, canonical));
    if (!signature) return signature.error();
    const std::string signed_headers = SignedHeaderNames(SignedHeaderMap(*r));
    r->headers.emplace_back("authorization", std::string(AmazonPayAlgorithmName(options.algorithm)) + " PublicKeyId=" +
                                                 options.public_key_id + ", SignedHeaders=" + signed_headers +
                                                 ", Signature=" + internal::Base64(*signature));
    return Status::OK();
  });
}

}  // namespace phasekey::phases
