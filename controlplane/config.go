package controlplane

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Config configures a Plane. The zero value is a disabled control plane;
// DefaultConfig is the enabled one with the documented defaults.
type Config struct {
	// Enabled turns the control plane on (enable_control_plane). Disabled,
	// the plane issues nothing (ErrDisabled), lists nothing, never publishes
	// an overlay and adds no work to evaluations.
	Enabled bool
	// ExpiryEvery is how many evaluations (ObserveEvaluation calls) pass
	// between two expiry checks; 0 means 100.
	ExpiryEvery int
	// ExpiryInterval is how often Run checks expiry; 0 means one second.
	ExpiryInterval time.Duration
}

// DefaultConfig returns an enabled control plane checking expiry every 100
// evaluations and every second.
func DefaultConfig() Config {
	return Config{Enabled: true, ExpiryEvery: 100, ExpiryInterval: time.Second}
}

// Validate reports every problem of c.
func (c Config) Validate() error {
	var errs []error
	if c.ExpiryEvery < 0 {
		errs = append(errs, fmt.Errorf("controlplane config: expiry_every must not be negative, got %d", c.ExpiryEvery))
	}
	if c.ExpiryInterval < 0 {
		errs = append(errs, fmt.Errorf("controlplane config: expiry_interval must not be negative, got %v", c.ExpiryInterval))
	}
	return errors.Join(errs...)
}

func (c *Config) normalize() {
	if c.ExpiryEvery == 0 {
		c.ExpiryEvery = 100
	}
	if c.ExpiryInterval == 0 {
		c.ExpiryInterval = time.Second
	}
}

// Option configures a Plane beyond Config (rare knobs).
type Option func(*Plane)

// WithClock replaces time.Now (tests, simulation).
func WithClock(now func() time.Time) Option { return func(p *Plane) { p.clock = now } }

// WithLogger sets where the plane reports the errors of background expiry
// (ObserveEvaluation, Run); slog.Default() when not given.
func WithLogger(l *slog.Logger) Option { return func(p *Plane) { p.log = l } }
