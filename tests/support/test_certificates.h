// Certificates for TLS tests, made with OpenSSL's API (no openssl command,
// no files in the tree): a CA and leaf certificates it signs or that sign
// themselves, each valid from an hour ago for two days.
#ifndef PHASEKEY_TESTS_SUPPORT_TEST_CERTIFICATES_H_
#define PHASEKEY_TESTS_SUPPORT_TEST_CERTIFICATES_H_

#include <string>

namespace phasekey::testing {

// Makes in `dir` (which must exist): ca.pem (a CA); good.pem/good.key
// (signed by it, for 127.0.0.1 and localhost); other.pem/other.key (signed
// by it, for other.example only); self.pem/self.key (self-signed, for
// 127.0.0.1). Throws std::runtime_error when OpenSSL or a write fails.
void MakeTestCertificates(const std::string& dir);

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_TEST_CERTIFICATES_H_
