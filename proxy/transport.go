package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
)

// newTransport returns the upstream transport. It never reads HTTP_PROXY or
// HTTPS_PROXY (Proxy is nil: the proxy cannot loop through itself), keeps
// enough idle connections per host for thousands of calls per second,
// leaves bodies as the tool sent them (no transparent gzip) and trusts the
// system roots plus extra, when given.
func newTransport(d *net.Dialer, extra *x509.CertPool, headerTimeout time.Duration) *http.Transport {
	if headerTimeout == 0 {
		headerTimeout = DefaultResponseHeaderTimeout
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if extra != nil {
		tlsConf.RootCAs = extra
	}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           4096,
		MaxIdleConnsPerHost:    1024,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		ResponseHeaderTimeout:  headerTimeout,
		MaxResponseHeaderBytes: 1 << 20,
		DisableCompression:     true,
		TLSClientConfig:        tlsConf,
	}
}

// UpstreamPool returns the system roots plus the PEM certificates in pem,
// for Options.UpstreamCAs (proxy.upstream_ca_file). It fails when pem holds
// no certificate.
func UpstreamPool(pem []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("proxy: no PEM certificate found in the upstream CA file")
	}
	return pool, nil
}

// errExcluded marks an upstream call that ended for a reason that is not the
// tool's fault (the agent went away, governance interrupted it): the
// breaker counts it neither way.
var errExcluded = errors.New("proxy: call ended by its client")

// errUpstreamStatus marks an upstream answer of 502, 503 or 504: the tool (or
// its gateway) is down.
var errUpstreamStatus = errors.New("proxy: upstream answered 502, 503 or 504")

// breakers holds one circuit breaker per upstream host (host:port).
type breakers struct {
	cfg BreakerConfig
	log *slog.Logger

	mu sync.RWMutex
	m  map[string]*gobreaker.TwoStepCircuitBreaker[struct{}]
}

func newBreakers(cfg BreakerConfig, log *slog.Logger) *breakers {
	if cfg.Failures == 0 {
		cfg.Failures = DefaultBreakerFailures
	}
	if cfg.OpenFor == 0 {
		cfg.OpenFor = DefaultBreakerOpenFor
	}
	return &breakers{cfg: cfg, log: log, m: map[string]*gobreaker.TwoStepCircuitBreaker[struct{}]{}}
}

// allow asks host's breaker for a call: done reports how the call went
// (nil: it did; errExcluded: not the tool's fault; anything else: a
// failure). A non-nil error means the breaker is open: fail fast.
func (b *breakers) allow(host string) (done func(error), err error) {
	b.mu.RLock()
	cb := b.m[host]
	b.mu.RUnlock()
	if cb == nil {
		b.mu.Lock()
		if cb = b.m[host]; cb == nil {
			cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
				Name:        host,
				MaxRequests: 1,
				Timeout:     b.cfg.OpenFor,
				ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= b.cfg.Failures },
				IsExcluded:  func(err error) bool { return errors.Is(err, errExcluded) },
				OnStateChange: func(name string, from, to gobreaker.State) {
					b.log.Warn("proxy: upstream circuit breaker", "host", name, "from", from.String(), "to", to.String())
				},
			})
			b.m[host] = cb
		}
		b.mu.Unlock()
	}
	return cb.Allow()
}

// state returns the breaker state of host ("closed" for a host never
// called).
func (b *breakers) state(host string) string {
	b.mu.RLock()
	cb := b.m[host]
	b.mu.RUnlock()
	if cb == nil {
		return gobreaker.StateClosed.String()
	}
	return cb.State().String()
}
