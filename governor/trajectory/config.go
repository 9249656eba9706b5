package trajectory

import (
	"errors"
	"fmt"
	"math"
)

// Costs are what the optimizer charges (GOVERNOR.md §10). All are
// non-negative.
type Costs struct {
	// Advisory is charged each time an advisory is issued (1).
	Advisory float64
	// ThrottlePerStep is charged for every step the throttle is active (5).
	ThrottlePerStep float64
	// Escalate is charged when the agent is escalated (50).
	Escalate float64
	// Violation is charged once per run when drift reaches the critical
	// threshold while the agent is not escalated (200).
	Violation float64
}

// DefaultCosts returns the costs of GOVERNOR.md §10.
func DefaultCosts() Costs {
	return Costs{Advisory: 1, ThrottlePerStep: 5, Escalate: 50, Violation: 200}
}

// Config holds the constants of projection and optimization. The zero value
// is not valid; start from DefaultConfig. Project, Optimize and Simulate
// never fail: each field that Validate would reject is replaced by its
// default.
type Config struct {
	// Window is how many of the latest drift points the velocity fit uses
	// (5; at least 2).
	Window int
	// Lookahead is how many observations ahead the risk level looks (20; at
	// least 1).
	Lookahead int
	// Horizon is how many projected points Project returns, and the default
	// horizon of Optimize and Simulate (50; at least 1).
	Horizon int
	// Runs is the number of Monte Carlo runs per strategy (1000; at least 1).
	Runs int
	// Seed seeds the runs (1): the same seed gives the same answer.
	Seed uint64
	// MinSigma is the floor of the noise's standard deviation (0.005; 0 makes
	// every run of a trajectory with zero residuals identical).
	MinSigma float64
	// Costs are the optimizer's costs.
	Costs Costs
}

// DefaultConfig returns the constants of GOVERNOR.md §10.
func DefaultConfig() Config {
	return Config{
		Window:    5,
		Lookahead: 20,
		Horizon:   50,
		Runs:      1000,
		Seed:      1,
		MinSigma:  0.005,
		Costs:     DefaultCosts(),
	}
}

// Validate reports every out-of-range field.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("trajectory config: "+format, args...))
		}
	}
	check(c.Window >= 2, "window must be at least 2, got %d", c.Window)
	check(c.Lookahead >= 1, "lookahead must be at least 1, got %d", c.Lookahead)
	check(c.Horizon >= 1, "horizon must be at least 1, got %d", c.Horizon)
	check(c.Runs >= 1, "runs must be at least 1, got %d", c.Runs)
	check(nonNegative(c.MinSigma), "min sigma must be a non-negative number, got %v", c.MinSigma)
	check(nonNegative(c.Costs.Advisory), "advisory cost must be a non-negative number, got %v", c.Costs.Advisory)
	check(nonNegative(c.Costs.ThrottlePerStep), "throttle cost must be a non-negative number, got %v", c.Costs.ThrottlePerStep)
	check(nonNegative(c.Costs.Escalate), "escalate cost must be a non-negative number, got %v", c.Costs.Escalate)
	check(nonNegative(c.Costs.Violation), "violation cost must be a non-negative number, got %v", c.Costs.Violation)
	return errors.Join(errs...)
}

// normalized replaces every field Validate would reject by its default.
func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.Window < 2 {
		c.Window = d.Window
	}
	if c.Lookahead < 1 {
		c.Lookahead = d.Lookahead
	}
	if c.Horizon < 1 {
		c.Horizon = d.Horizon
	}
	if c.Runs < 1 {
		c.Runs = d.Runs
	}
	if !nonNegative(c.MinSigma) {
		c.MinSigma = d.MinSigma
	}
	fix := func(v *float64, def float64) {
		if !nonNegative(*v) {
			*v = def
		}
	}
	fix(&c.Costs.Advisory, d.Costs.Advisory)
	fix(&c.Costs.ThrottlePerStep, d.Costs.ThrottlePerStep)
	fix(&c.Costs.Escalate, d.Costs.Escalate)
	fix(&c.Costs.Violation, d.Costs.Violation)
	return c
}

// nonNegative reports whether x is a finite number >= 0.
func nonNegative(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }
