-- Named queries of engine/src/seal/sealer.cc: the key-encryption keys'
-- check values and the accounts' data keys (sql/migrations/0001_baseline.sql,
-- docs/data-protection.md). Wrapped keys and check values are bytea, sent
-- and read as hex.

-- name: SealerKeks
-- Every key-encryption key that wraps (or wrapped) a data key, with its
-- check value, and whether a live data key is still wrapped by it.
SELECT k.kek_id, encode(k.check_value, 'hex'),
       EXISTS (SELECT 1 FROM phasekey.data_keys d WHERE d.kek_id = k.kek_id AND d.erased_at IS NULL)
FROM phasekey.key_encryption_keys k
ORDER BY k.kek_id;

-- name: SealerKekRecord
-- Records a key-encryption key's check value the first time it is current;
-- a second recording of the same id changes nothing (the caller then
-- checks the stored value).
INSERT INTO phasekey.key_encryption_keys (kek_id, check_value)
VALUES ($1, decode($2, 'hex'))
ON CONFLICT (kek_id) DO NOTHING;

-- name: SealerDataKeyLive
-- The account's live data key.
SELECT id, kek_id, encode(wrapped, 'hex')
FROM phasekey.data_keys
WHERE bucket = $1 AND account = $2 AND erased_at IS NULL;

-- name: SealerDataKeyCreate
-- A new data key for the account, unless another process created one
-- first (then nothing is returned and the caller reads that one).
INSERT INTO phasekey.data_keys (bucket, account, kek_id, wrapped)
VALUES ($1, $2, $3, decode($4, 'hex'))
ON CONFLICT (bucket, account) WHERE erased_at IS NULL DO NOTHING
RETURNING id;

-- name: SealerDataKeyGet
-- A data key by id (the one a key row's bodies are sealed under); wrapped
-- is NULL once the account was erased.
SELECT account, kek_id, encode(wrapped, 'hex')
FROM phasekey.data_keys
WHERE bucket = $1 AND id = $2;
