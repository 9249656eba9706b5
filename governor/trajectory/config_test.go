package trajectory

import (
	"math"
	"strings"
	"testing"
)

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("default config: got %v, want nil", err)
	}
	want := Config{Window: 5, Lookahead: 20, Horizon: 50, Runs: 1000, Seed: 1, MinSigma: 0.005,
		Costs: Costs{Advisory: 1, ThrottlePerStep: 5, Escalate: 50, Violation: 200}}
	if c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string // "" for valid
	}{
		{"window 1", func(c *Config) { c.Window = 1 }, "window"},
		{"lookahead 0", func(c *Config) { c.Lookahead = 0 }, "lookahead"},
		{"horizon 0", func(c *Config) { c.Horizon = 0 }, "horizon"},
		{"runs 0", func(c *Config) { c.Runs = 0 }, "runs"},
		{"negative sigma", func(c *Config) { c.MinSigma = -1 }, "min sigma"},
		{"NaN sigma", func(c *Config) { c.MinSigma = math.NaN() }, "min sigma"},
		{"zero sigma", func(c *Config) { c.MinSigma = 0 }, ""},
		{"negative advisory", func(c *Config) { c.Costs.Advisory = -1 }, "advisory cost"},
		{"infinite violation", func(c *Config) { c.Costs.Violation = math.Inf(1) }, "violation cost"},
		{"zero costs", func(c *Config) { c.Costs = Costs{} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.change(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error about %s", err, tt.want)
			}
			if n := c.normalized(); n.Validate() != nil {
				t.Errorf("normalized config: got %v, want nil", n.Validate())
			}
		})
	}
	if err := (Config{}).Validate(); err == nil {
		t.Errorf("zero config: got nil, want an error")
	}
	if got, want := (Config{}).normalized(), (Config{Window: 5, Lookahead: 20, Horizon: 50, Runs: 1000}); got != want {
		t.Errorf("normalized zero config: got %+v, want %+v", got, want)
	}
}
