-- What each host's latest evaluation was computed from (posture digest, policy version, waivers
-- in force), so that an identical report skips evaluation; and the rule that classified each
-- share, next to its classification (both written by evaluation).
ALTER TABLE hosts ADD COLUMN evaluation_key text NOT NULL DEFAULT '';
ALTER TABLE host_shares ADD COLUMN classification_rule text NOT NULL DEFAULT '';
