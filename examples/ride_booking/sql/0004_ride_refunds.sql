-- The refund of a ride's charge (POST /rides/{id}/refund, refund_flow.h):
-- the provider's refund id, NULL until refunded. A ride is refunded once,
-- whole.
ALTER TABLE rides ADD COLUMN refund_id text UNIQUE CHECK (char_length(refund_id) <= 100);
