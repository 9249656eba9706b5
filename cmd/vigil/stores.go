package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigilhq/vigil/controlplane"
	"github.com/vigilhq/vigil/ledger"
)

// controlStore is a control plane store that serve closes at shutdown.
type controlStore interface {
	controlplane.Store
	Close() error
}

// stores holds what serve opened and must close, in order.
type stores struct {
	redis   redis.UniversalClient // nil in embedded mode
	ledger  ledger.Store          // nil when the ledger is disabled
	spool   *ledger.Spool         // the ledger's local spool: Redis mode only
	control controlStore          // nil when the control plane is disabled
}

// openStores opens the ledger's store and the control plane's: the
// embedded file stores in DATA_DIR/ledger and DATA_DIR/controlplane, or the
// Redis stores on one shared client when a Redis URL is set. A disabled
// subsystem gets no store.
func openStores(ctx context.Context, s serveSettings, cfg *fileConfig) (_ *stores, err error) {
	out := &stores{}
	defer func() {
		if err != nil {
			_ = out.close()
		}
	}()
	if s.RedisURL != "" {
		client, err := redisClient(ctx, s.RedisURL)
		if err != nil {
			return nil, err
		}
		out.redis = client
	}
	if cfg.ledgerEnabled() {
		if out.ledger, err = openLedgerStore(out.redis, s, cfg); err != nil {
			return nil, err
		}
		if out.redis != nil {
			// Entries Redis cannot take wait here (ARCHITECTURE.md,
			// failure behaviour) and are replayed when it answers.
			if out.spool, err = ledger.OpenSpool(filepath.Join(s.DataDir, "ledger-spool")); err != nil {
				return nil, err
			}
		}
	}
	if cfg.controlPlaneEnabled() {
		if out.control, err = openControlStore(out.redis, s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// openLedgerStore opens the ledger's Redis store on client, or its file
// store in DATA_DIR/ledger when client is nil.
func openLedgerStore(client redis.UniversalClient, s serveSettings, cfg *fileConfig) (ledger.Store, error) {
	if client != nil {
		st, err := ledger.NewRedisStore(client, ledger.RedisOptions{})
		if err != nil {
			return nil, fmt.Errorf("ledger: %w", err)
		}
		return st, nil
	}
	st, err := ledger.OpenFileStore(filepath.Join(s.DataDir, "ledger"), ledger.FileOptions{Durability: ledger.Durability(cfg.Ledger.Durability)})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// openControlStore opens the control plane's Redis store on client (shared
// by every sidecar on that Redis), or its file store in
// DATA_DIR/controlplane when client is nil.
func openControlStore(client redis.UniversalClient, s serveSettings) (controlStore, error) {
	if client != nil {
		st, err := controlplane.NewRedisStore(client, controlplane.DefaultRedisOptions())
		if err != nil {
			return nil, fmt.Errorf("control plane: %w", err)
		}
		return st, nil
	}
	st, err := controlplane.OpenFileStore(filepath.Join(s.DataDir, "controlplane"))
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	return st, nil
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
		// The stores bound each call with a context deadline (the control
		// plane's is 500 ms); let it cut the connection's read too.
		ContextTimeoutEnabled: true,
	})
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("--redis-url: %s does not answer: %w", opts.Addr, err)
	}
	return client, nil
}

// close flushes and closes the ledger store, then the control plane's
// store, then the Redis client. Each is closed once; closing again does
// nothing.
func (s *stores) close() error {
	var first error
	if s.ledger != nil {
		if err := s.ledger.Close(); err != nil {
			first = fmt.Errorf("closing the ledger: %w", err)
		}
		s.ledger = nil
	}
	if s.spool != nil {
		if err := s.spool.Close(); err != nil && first == nil {
			first = fmt.Errorf("closing the ledger spool: %w", err)
		}
		s.spool = nil
	}
	if s.control != nil {
		if err := s.control.Close(); err != nil && first == nil {
			first = fmt.Errorf("closing the control plane store: %w", err)
		}
		s.control = nil
	}
	if s.redis != nil {
		if err := s.redis.Close(); err != nil && first == nil {
			first = fmt.Errorf("closing the Redis client: %w", err)
		}
		s.redis = nil
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
