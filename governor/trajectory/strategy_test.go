package trajectory

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestStrategies(t *testing.T) {
	want := []Strategy{"no_op", "early_advisory", "wait_and_throttle", "immediate_escalate", "graduated"}
	if got := Strategies(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	s := Strategies()
	s[0] = "changed"
	if got := Strategies()[0]; got != NoOp {
		t.Errorf("Strategies shares its slice: got %q after a caller's change, want %q", got, NoOp)
	}
}

func TestParseStrategy(t *testing.T) {
	for _, s := range Strategies() {
		got, err := ParseStrategy(string(s))
		if err != nil || got != s {
			t.Errorf("ParseStrategy(%q): got %q, %v, want %q, nil", s, got, err, s)
		}
	}
	for _, name := range []string{"", "NO_OP", "graduated ", "escalate", "noop"} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseStrategy(name)
			if !errors.Is(err, ErrUnknownStrategy) {
				t.Fatalf("got %v, want ErrUnknownStrategy", err)
			}
			for _, s := range Strategies() {
				if !strings.Contains(err.Error(), string(s)) {
					t.Errorf("error %q does not list %q", err, s)
				}
			}
		})
	}
}

func TestThresholdRecommendation(t *testing.T) {
	tests := []struct {
		risk RiskLevel
		want Intervention
	}{
		{RiskLow, None},
		{RiskModerate, Advisory},
		{RiskHigh, Throttle},
		{RiskCritical, Escalate},
		{"", None},
	}
	for _, tt := range tests {
		if got := ThresholdRecommendation(tt.risk); got != tt.want {
			t.Errorf("ThresholdRecommendation(%q): got %q, want %q", tt.risk, got, tt.want)
		}
	}
}

func TestRecommend(t *testing.T) {
	tests := []struct {
		name   string
		risk   RiskLevel
		policy *Policy
		want   Recommendation
	}{
		{"no policy, low", RiskLow, nil, Recommendation{None, SourceThreshold}},
		{"no policy, moderate", RiskModerate, nil, Recommendation{Advisory, SourceThreshold}},
		{"no policy, high", RiskHigh, nil, Recommendation{Throttle, SourceThreshold}},
		{"no policy, critical", RiskCritical, nil, Recommendation{Escalate, SourceThreshold}},
		{"policy acts now", RiskLow, &Policy{Schedule: []Step{{0, Advisory}, {7, Throttle}}}, Recommendation{Advisory, SourceOptimizer}},
		{"policy acts later", RiskCritical, &Policy{Schedule: []Step{{3, Escalate}}}, Recommendation{None, SourceOptimizer}},
		{"policy never acts", RiskCritical, &Policy{}, Recommendation{None, SourceOptimizer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Recommend(Trajectory{Risk: tt.risk}, tt.policy); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
