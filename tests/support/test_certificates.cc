// MakeTestCertificates (test_certificates.h).
#include "support/test_certificates.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace phasekey::testing {
namespace {

// A P-256 key.
EVP_PKEY* NewKey() { return EVP_EC_gen("P-256"); }

// A certificate for `subject` with `san` (e.g. "IP:127.0.0.1,DNS:localhost";
// empty: none) and `key`, signed by `issuer_key` as `issuer` (itself when
// null); a CA when `ca`.
X509* NewCertificate(const std::string& subject, const std::string& san, EVP_PKEY* key, X509* issuer,
                     EVP_PKEY* issuer_key, bool ca) {
  static long serial = 1;
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 2 * 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(subject.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert, issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : cert, cert, nullptr, nullptr, 0);
  auto add = [&](int nid, const std::string& value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (ext == nullptr) throw std::runtime_error("bad extension " + value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  };
  add(NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  add(NID_key_usage, ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
  if (!ca) add(NID_ext_key_usage, "serverAuth");
  if (!san.empty()) add(NID_subject_alt_name, san);
  if (X509_sign(cert, issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) {
    throw std::runtime_error("cannot sign " + subject);
  }
  return cert;
}

void WritePem(const std::string& path, X509* cert, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  if (cert != nullptr) PEM_write_X509(f, cert);
  if (key != nullptr) PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
}

}  // namespace

void MakeTestCertificates(const std::string& dir) {
  EVP_PKEY* ca_key = NewKey();
  X509* ca = NewCertificate("phasekey test CA", "", ca_key, nullptr, nullptr, true);
  WritePem(dir + "/ca.pem", ca, nullptr);
  auto leaf = [&](const std::string& name, const std::string& san, bool self_signed) {
    EVP_PKEY* key = NewKey();
    X509* cert = self_signed ? NewCertificate("127.0.0.1", san, key, nullptr, nullptr, false)
                             : NewCertificate("phasekey test server", san, key, ca, ca_key, false);
    WritePem(dir + "/" + name + ".pem", cert, nullptr);
    WritePem(dir + "/" + name + ".key", nullptr, key);
    X509_free(cert);
    EVP_PKEY_free(key);
  };
  leaf("good", "IP:127.0.0.1,DNS:localhost", false);
  leaf("other", "DNS:other.example", false);
  leaf("self", "IP:127.0.0.1", true);
  X509_free(ca);
  EVP_PKEY_free(ca_key);
}

}  // namespace phasekey::testing
