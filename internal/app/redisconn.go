package app

import (
	"crypto/tls"

	"github.com/trawlerhq/trawler/internal/config"
	"github.com/trawlerhq/trawler/pkg/store"
)

// redisOptions turns the Redis credentials and TLS settings of cfg into
// store options. TLS verifies servers against the system roots, which
// SSL_CERT_FILE and SSL_CERT_DIR extend with a private CA (as the chart does).
func redisOptions(cfg config.Config) []store.RedisOption {
	var opts []store.RedisOption
	if cfg.RedisPassword != "" {
		opts = append(opts, store.WithRedisAuth("", cfg.RedisPassword))
	}
	if cfg.RedisTLS {
		opts = append(opts, store.WithRedisTLS(&tls.Config{MinVersion: tls.VersionTLS12}))
	}
	return opts
}

// RedisOptions are cfg's Redis password and TLS settings, for commands
// that open the store themselves (trawler status).
func RedisOptions(cfg config.Config) []store.RedisOption { return redisOptions(cfg) }
