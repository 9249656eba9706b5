package governor

import (
	"errors"
	"fmt"
)

// Config holds every constant of the decision algorithm (GOVERNOR.md). The
// zero value is not usable; start from DefaultConfig.
type Config struct {
	// Tier 2 thresholds (inclusive): UCS >= AllowThreshold allows, UCS <=
	// DenyThreshold denies.
	AllowThreshold float64
	DenyThreshold  float64

	// Weights of the 13 dimensions, by dimension name.
	Weights map[string]float64

	// Trust.
	TrustBaseline        float64 // start and decay target (0.5)
	TrustMin, TrustMax   float64 // bounds (0.05, 0.95)
	TrustAllowDelta      float64 // +0.01
	TrustDenyDelta       float64 // -0.05
	TrustCompletedDelta  float64 // +0.005
	TrustInterruptDelta  float64 // -0.03
	TrustDecayPerHour    float64 // 0.01 toward the baseline per idle hour
	TrustDecayMinIdle    float64 // seconds of idleness below which nothing decays (36)
	TrustEventMin        float64 // a change larger than this is a trust event (0.001)
	TrustEventsKept      int     // 500
	TrustNegligible      float64 // |change| below this counts as negligible for direction (0.002)
	TrustTrendWindow     int     // events and evaluations for direction and velocity (20)
	MandatoryReviewTrust float64 // trust below this vetoes through human_override (0.3)

	// Tier 3.
	Tier3TrustAllow    float64 // trust > 0.7 and UCS > Tier3UCSAllow allows
	Tier3UCSAllow      float64 // 0.5
	Tier3TrustEscalate float64 // trust < 0.4 escalates
	ModifyWeight       float64 // a dimension of weight >= 1.3 ...
	ModifyScore        float64 // ... scoring < 0.4 modifies

	// UCS.
	TrustShiftFactor float64 // (trust - 0.5) * 0.2
	FloorDragBelow   float64 // 0.2
	FloorDragFactor  float64 // 0.3
	CriticalPenalty  float64 // 0.1 per critical cross-dimensional signal

	// Fingerprint and drift.
	PriorWeight        float64 // 50 observations' worth
	Window             int     // 100 observations
	DriftEvery         int     // recompute every 10 observations ...
	DriftMinWindow     int     // ... once the window holds 20
	ConfidenceScale    float64 // 200: 1 - e^(-n/200)
	Thresholds         Thresholds
	AnchorOccurrences  int // a term's anchored distribution is its first 20 occurrences
	RecentKept         int // recent action types kept per agent for incident detection (20)
	DriftHistoryKept   int // drift points kept per agent (1000)
	DeniedDigestsKept  int // recently denied actions remembered for resubmission (100)
	InstructionMaxRune int // instruction context recorded in the decision (512)
	AlertsKept         int // drift alerts kept per agent (100)
	MaxDistinctKeys    int // distinct keys per fingerprint distribution; more fold into "other" (256)

	// Drift erosion of trust, applied once per drift recomputation and scaled
	// by drift confidence: the first band whose At the overall drift reaches.
	Erosion []ErosionBand
	// Recovery: when overall drift falls below RecoveryBelow after having
	// reached RecoveryAfter, trust rises by RecoveryDelta.
	RecoveryBelow, RecoveryAfter, RecoveryDelta float64
}

// ErosionBand is one band of drift erosion: from overall drift At, trust
// changes by Delta (negative) times the drift confidence.
type ErosionBand struct {
	At    float64
	Delta float64
}

// Thresholds are drift severity thresholds (before any tighten factor).
type Thresholds struct {
	Low      float64 `json:"low"`
	Moderate float64 `json:"moderate"`
	High     float64 `json:"high"`
	Critical float64 `json:"critical"`
}

// Scale multiplies every threshold by f.
func (t Thresholds) Scale(f float64) Thresholds {
	return Thresholds{Low: t.Low * f, Moderate: t.Moderate * f, High: t.High * f, Critical: t.Critical * f}
}

// DefaultConfig returns the constants of GOVERNOR.md.
func DefaultConfig() Config {
	w := make(map[string]float64, len(dimensionOrder))
	for _, d := range dimensionOrder {
		w[d.name] = d.weight
	}
	return Config{
		AllowThreshold:       0.7,
		DenyThreshold:        0.3,
		Weights:              w,
		TrustBaseline:        0.5,
		TrustMin:             0.05,
		TrustMax:             0.95,
		TrustAllowDelta:      0.01,
		TrustDenyDelta:       -0.05,
		TrustCompletedDelta:  0.005,
		TrustInterruptDelta:  -0.03,
		TrustDecayPerHour:    0.01,
		TrustDecayMinIdle:    36,
		TrustEventMin:        0.001,
		TrustEventsKept:      500,
		TrustNegligible:      0.002,
		TrustTrendWindow:     20,
		MandatoryReviewTrust: 0.3,
		Tier3TrustAllow:      0.7,
		Tier3UCSAllow:        0.5,
		Tier3TrustEscalate:   0.4,
		ModifyWeight:         1.3,
		ModifyScore:          0.4,
		TrustShiftFactor:     0.2,
		FloorDragBelow:       0.2,
		FloorDragFactor:      0.3,
		CriticalPenalty:      0.1,
		PriorWeight:          50,
		Window:               100,
		DriftEvery:           10,
		DriftMinWindow:       20,
		ConfidenceScale:      200,
		Thresholds:           Thresholds{Low: 0.10, Moderate: 0.20, High: 0.40, Critical: 0.60},
		AnchorOccurrences:    20,
		RecentKept:           20,
		DriftHistoryKept:     1000,
		DeniedDigestsKept:    100,
		InstructionMaxRune:   512,
		AlertsKept:           100,
		MaxDistinctKeys:      256,
		Erosion: []ErosionBand{
			{At: 0.60, Delta: -0.04}, {At: 0.40, Delta: -0.02},
			{At: 0.20, Delta: -0.008}, {At: 0.10, Delta: -0.002},
		},
		RecoveryBelow: 0.10,
		RecoveryAfter: 0.15,
		RecoveryDelta: 0.003,
	}
}

// Validate reports the first inconsistent constant.
func (c *Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("governor config: "+format, args...))
		}
	}
	check(c.DenyThreshold >= 0 && c.DenyThreshold < c.AllowThreshold && c.AllowThreshold <= 1,
		"need 0 <= deny threshold (%v) < allow threshold (%v) <= 1", c.DenyThreshold, c.AllowThreshold)
	for _, d := range dimensionOrder {
		w, ok := c.Weights[d.name]
		check(ok && w > 0, "weight of %s must be positive", d.name)
	}
	check(c.TrustMin >= 0 && c.TrustMin < c.TrustMax && c.TrustMax <= 1, "need 0 <= trust min < trust max <= 1")
	check(c.TrustBaseline >= c.TrustMin && c.TrustBaseline <= c.TrustMax, "trust baseline outside the trust bounds")
	check(c.Window > 0 && c.DriftEvery > 0 && c.DriftMinWindow > 0 && c.DriftMinWindow <= c.Window,
		"need positive window sizes and drift min window <= window")
	check(c.TrustEventsKept > 0 && c.TrustTrendWindow > 1 && c.RecentKept >= 5 && c.DriftHistoryKept > 0,
		"history sizes must be positive (recent >= 5, trend window >= 2)")
	t := c.Thresholds
	check(t.Low > 0 && t.Low < t.Moderate && t.Moderate < t.High && t.High < t.Critical,
		"drift thresholds must increase: low < moderate < high < critical")
	check(c.PriorWeight >= 0 && c.ConfidenceScale > 0 && c.AnchorOccurrences > 0, "prior weight, confidence scale and anchor occurrences must be positive")
	check(c.AlertsKept > 0 && c.MaxDistinctKeys > 1 && c.InstructionMaxRune > 0, "alerts kept, distinct keys and instruction length must be positive")
	for i := 1; i < len(c.Erosion); i++ {
		check(c.Erosion[i].At < c.Erosion[i-1].At, "erosion bands must be ordered by descending drift")
	}
	return errors.Join(errs...)
}
