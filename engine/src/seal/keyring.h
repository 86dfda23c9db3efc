// Keyring: the key-encryption keys an operator supplied
// (EncryptionOptions: a file or a command's output, "<id> <64 hex digits>"
// per line, the current key first).
#ifndef PHASEKEY_SRC_SEAL_KEYRING_H_
#define PHASEKEY_SRC_SEAL_KEYRING_H_

#include <map>
#include <string>
#include <string_view>

#include "phasekey/data_protection.h"
#include "phasekey/status.h"
#include "seal/aead.h"

namespace phasekey::seal {

struct Keyring {
  std::string current;              // the id of the first key
  std::map<std::string, Key> keys;  // every key by id, the current one included

  // The key named `id`, or nullptr.
  const Key* Find(const std::string& id) const {
    auto it = keys.find(id);
    return it == keys.end() ? nullptr : &it->second;
  }
};

// Parses a keyring's text. `origin` names where it came from in errors
// (which never quote a key). InvalidArgument: no key, a malformed line, a
// duplicate id.
Result<Keyring> ParseKeyring(std::string_view text, const std::string& origin);

// Reads the keyring `options` name: the file (refused unless a regular
// file readable by its owner alone) or the command's standard output
// (refused on a non-zero exit). InvalidArgument when neither or both are
// set; FailedPrecondition for a file or command that cannot give one.
Result<Keyring> LoadKeyring(const EncryptionOptions& options);

}  // namespace phasekey::seal

#endif  // PHASEKEY_SRC_SEAL_KEYRING_H_
