#include "embedded_postgres/embedded_postgres_auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace phasekey::pg::embedded {
namespace {

// PostgreSQL's default (scram_iterations, SCRAM_DEFAULT_ITERATIONS) and salt
// length (SCRAM_DEFAULT_SALT_LEN).
constexpr int kScramIterations = 4096;
constexpr int kScramSaltBytes = 16;
constexpr int kPasswordBytes = 32;

// `n` bytes from the kernel's random source (getrandom(2)). Not OpenSSL's
// RAND_bytes: that leaves a per-thread generator behind, which a thread that
// outlives OPENSSL_cleanup at exit leaks.
bool RandomBytes(unsigned char* out, size_t n) {
  while (n > 0) {
    const ssize_t got = getrandom(out, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

std::string Base64(const unsigned char* data, size_t n) {
  std::string out(4 * ((n + 2) / 3) + 1, '\0');
  const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(n));
  out.resize(static_cast<size_t>(len));
  return out;
}

// A pgpass field: ':' and '\' escaped with a backslash.
std::string PgpassField(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == ':' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

Status ChownTo(int fd, const std::string& path, const ServerUser& user) {
  if (user.switch_user && fchown(fd, user.uid, user.gid) != 0) {
    return Status::FailedPrecondition("cannot chown " + path + ": " + std::strerror(errno));
  }
  return Status::OK();
}

// Writes `text` to `path` through "<path>.tmp" (0600, handed to `user`), then
// renames it into place.
Status WriteFileAtomically(const std::string& path, const std::string& text, const ServerUser& user) {
  const std::string tmp = path + ".tmp";
  unlink(tmp.c_str());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FailedPrecondition("cannot create " + tmp + ": " + std::strerror(errno));
  Status s = ChownTo(fd, tmp, user);
  if (s.ok() && write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    s = Status::FailedPrecondition("cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (s.ok() && fsync(fd) != 0) s = Status::FailedPrecondition("cannot fsync " + tmp + ": " + std::strerror(errno));
  close(fd);
  if (s.ok() && rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::FailedPrecondition("cannot rename " + tmp + ": " + std::strerror(errno));
  }
  if (!s.ok()) unlink(tmp.c_str());
  return s;
}

}  // namespace

Result<std::string> NewPassword() {
  unsigned char bytes[kPasswordBytes];
  if (!RandomBytes(bytes, sizeof(bytes))) {
    return Status::FailedPrecondition(std::string("embedded postgres: no random bytes for a password: ") +
                                      std::strerror(errno));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

Result<std::string> ScramSecret(std::string_view password) {
  unsigned char salt[kScramSaltBytes];
  if (!RandomBytes(salt, sizeof(salt))) {
    return Status::FailedPrecondition(std::string("embedded postgres: no random bytes for a salt: ") +
                                      std::strerror(errno));
  }
  // SaltedPassword = Hi(password, salt, i); ClientKey = HMAC(SaltedPassword,
  // "Client Key"); StoredKey = H(ClientKey); ServerKey = HMAC(SaltedPassword,
  // "Server Key"). The password is ASCII, so SASLprep leaves it as it is.
  // OpenSSL keeps per-thread state (its error queue); free it when done, so
  // that a thread still running at exit (after OPENSSL_cleanup) leaks nothing.
  struct ThreadStop {
    ~ThreadStop() { OPENSSL_thread_stop(); }
  } thread_stop;
  unsigned char salted[SHA256_DIGEST_LENGTH];
  if (PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()), salt, sizeof(salt), kScramIterations,
                        EVP_sha256(), sizeof(salted), salted) != 1) {
    return Status::FailedPrecondition("embedded postgres: PBKDF2 failed");
  }
  unsigned char client_key[SHA256_DIGEST_LENGTH];
  unsigned char server_key[SHA256_DIGEST_LENGTH];
  unsigned char stored_key[SHA256_DIGEST_LENGTH];
  unsigned int len = 0;
  static constexpr char kClient[] = "Client Key";
  static constexpr char kServer[] = "Server Key";
  if (HMAC(EVP_sha256(), salted, sizeof(salted), reinterpret_cast<const unsigned char*>(kClient), std::strlen(kClient),
           client_key, &len) == nullptr ||
      HMAC(EVP_sha256(), salted, sizeof(salted), reinterpret_cast<const unsigned char*>(kServer), std::strlen(kServer),
           server_key, &len) == nullptr) {
    return Status::FailedPrecondition("embedded postgres: HMAC failed");
  }
  SHA256(client_key, sizeof(client_key), stored_key);
  return "SCRAM-SHA-256$" + std::to_string(kScramIterations) + ":" + Base64(salt, sizeof(salt)) + "$" +
         Base64(stored_key, sizeof(stored_key)) + ":" + Base64(server_key, sizeof(server_key));
}

Status WritePasswordFile(const std::string& path, const std::string& socket_dir, const std::string& role,
                         const std::string& password, const ServerUser& user) {
  std::string text;
  for (const std::string& host : {std::string("127.0.0.1"), std::string("localhost"), socket_dir}) {
    text += PgpassField(host) + ":*:*:" + PgpassField(role) + ":" + PgpassField(password) + "\n";
  }
  return WriteFileAtomically(path, text, user);
}

Result<std::string> ReadPasswordFile(const std::string& path) {
  if (access(path.c_str(), F_OK) != 0 && errno == ENOENT) return Status::NotFound(path + " does not exist");
  std::ifstream in(path);
  if (!in) {
    return Status::FailedPrecondition("cannot read the embedded server's password file " + path + ": " +
                                      std::strerror(errno) + " (a server of another user?)");
  }
  std::string line;
  std::getline(in, line);
  const size_t colon = line.rfind(':');
  if (colon == std::string::npos || colon + 1 == line.size()) {
    return Status::FailedPrecondition(path + " holds no password; remove it to set a new one");
  }
  return line.substr(colon + 1);
}

Status WriteSecretFile(const std::string& path, const std::string& text, const ServerUser& user) {
  return WriteFileAtomically(path, text, user);
}

Status WriteHbaConf(const std::string& data_dir, const ServerUser& user) {
  static constexpr char kHba[] =
      "# Written by phasekey's EmbeddedPostgres at every start (docs/database.md):\n"
      "# a password (SCRAM) for every role, on the unix socket and on 127.0.0.1.\n"
      "# TYPE  DATABASE     USER  ADDRESS       METHOD\n"
      "local   all          all                 scram-sha-256\n"
      "host    all          all   127.0.0.1/32  scram-sha-256\n"
      "local   replication  all                 scram-sha-256\n"
      "host    replication  all   127.0.0.1/32  scram-sha-256\n";
  return WriteFileAtomically(data_dir + "/pg_hba.conf", kHba, user);
}

}  // namespace phasekey::pg::embedded
