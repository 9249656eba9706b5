package trajectory_test

import (
	"fmt"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/governor/trajectory"
)

func Example() {
	// Drift recomputed every 10 observations, rising 0.003 per observation.
	var history []governor.DriftPoint
	for i, d := range []float64{0.06, 0.09, 0.12, 0.15, 0.18} {
		history = append(history, governor.DriftPoint{Step: 100 + 10*i, Drift: governor.DriftScores{Overall: d}})
	}
	thresholds := governor.Thresholds{Low: 0.10, Moderate: 0.20, High: 0.40, Critical: 0.60}

	cfg := trajectory.DefaultConfig()
	cfg.MinSigma = 0  // no noise: every run follows the same path
	cfg.Horizon = 150 // look 150 observations ahead
	t := trajectory.Project(history, thresholds, nil, cfg)
	fmt.Printf("velocity %.3f per observation, risk %s\n", t.Velocity.Overall, t.Risk)
	fmt.Println("markers:", t.Markers)

	p := trajectory.Optimize(t, cfg.Horizon, cfg)
	fmt.Printf("%s: expected cost %.0f, savings %.0f%% against %s\n",
		p.Strategy, p.Expected.Total, p.Comparison.SavingsPercent, trajectory.ImmediateEscalate)
	fmt.Println("schedule:", p.Schedule)
	fmt.Printf("now: %+v\n", trajectory.Recommend(t, &p))
	// Output:
	// velocity 0.003 per observation, risk moderate
	// markers: [{147 advisory true} {214 throttle true} {280 escalate true}]
	// early_advisory: expected cost 1, savings 98% against immediate_escalate
	// schedule: [{0 advisory}]
	// now: {Intervention:advisory Source:optimizer}
}
