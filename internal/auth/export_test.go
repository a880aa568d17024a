package auth

import "time"

// WithMinJWKSRefresh lowers MinJWKSRefresh for cfg, so a test can watch a
// JWKS URL refresh in milliseconds.
func WithMinJWKSRefresh(cfg Config, floor time.Duration) Config {
	cfg.minJWKSRefresh = floor
	return cfg
}

// Verifications counts the full verifications v has passed (the ones its
// cache of verified tokens did not answer).
func (v *Validator) Verifications() int64 { return v.verified.verifications.Load() }
