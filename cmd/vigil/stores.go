package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigilhq/vigil/ledger"
)

// stores holds what serve opened and must close, in order.
type stores struct {
	redis  redis.UniversalClient // nil in embedded mode
	ledger ledger.Store          // nil when the ledger is disabled
}

// openStores opens the ledger's store: the embedded file store in
// DATA_DIR/ledger, or the Redis store when a Redis URL is set.
func openStores(ctx context.Context, s serveSettings, cfg *fileConfig) (*stores, error) {
	out := &stores{}
	if s.RedisURL != "" {
		client, err := redisClient(ctx, s.RedisURL)
		if err != nil {
			return nil, err
		}
		out.redis = client
	}
	if !cfg.ledgerEnabled() {
		return out, nil
	}
	if out.redis != nil {
		st, err := ledger.NewRedisStore(out.redis, ledger.RedisOptions{})
		if err != nil {
			out.close()
			return nil, fmt.Errorf("ledger: %w", err)
		}
		out.ledger = st
		return out, nil
	}
	st, err := ledger.OpenFileStore(filepath.Join(s.DataDir, "ledger"), ledger.FileOptions{Durability: ledger.Durability(cfg.Ledger.Durability)})
	if err != nil {
		return nil, err
	}
	out.ledger = st
	return out, nil
}

// redisClient builds the one Redis client of the process from a
// redis:// or rediss:// URL and checks that the server answers.
func redisClient(ctx context.Context, url string) (redis.UniversalClient, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("--redis-url: %w", err)
	}
	client := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: []string{opts.Addr}, DB: opts.DB, Username: opts.Username, Password: opts.Password, TLSConfig: opts.TLSConfig,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
	})
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("--redis-url: %s does not answer: %w", opts.Addr, err)
	}
	return client, nil
}

// close flushes and closes the ledger store, then the Redis client.
func (s *stores) close() error {
	var first error
	if s.ledger != nil {
		if err := s.ledger.Close(); err != nil {
			first = fmt.Errorf("closing the ledger: %w", err)
		}
	}
	if s.redis != nil {
		if err := s.redis.Close(); err != nil && first == nil {
			first = fmt.Errorf("closing the Redis client: %w", err)
		}
	}
	return first
}

// storeName is what GET /v1/info reports.
func (s *stores) storeName() string {
	if s.redis != nil {
		return "redis"
	}
	return "embedded"
}
