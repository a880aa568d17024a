package auth

import "time"

// WithMinJWKSRefresh lowers MinJWKSRefresh for cfg, so a test can watch a
// JWKS URL refresh in milliseconds.
func WithMinJWKSRefresh(cfg Config, floor time.Duration) Config {
	cfg.minJWKSRefresh = floor
	return cfg
}
