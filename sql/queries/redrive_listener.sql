-- Named queries of engine/src/workers/redrive_listener.cc.
--
-- RedriveListen: the listener's own connection subscribes to the channel
-- KeyNotifyRedrive (key_store.sql) notifies; its payload is
-- "<bucket> <milliseconds until next_attempt_at>". (The comment stands
-- above the header so that the statement's text, as pg_stat_activity shows
-- it, starts with LISTEN.)

-- name: RedriveListen
LISTEN phasekey_redrive;
