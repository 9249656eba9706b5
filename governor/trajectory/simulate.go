package trajectory

// Simulation is one strategy run over a horizon, for the what-if view. It
// applies nothing.
type Simulation struct {
	Strategy Strategy
	Horizon  int
	// CurrentDrift and CurrentVelocity are the overall drift and velocity the
	// runs start from.
	CurrentDrift    float64
	CurrentVelocity float64
	// Curve holds Horizon points in [0, 1]: Curve[i] is the mean overall drift
	// after step i, at observation count last observed step + i + 1.
	Curve []float64
	// Markers are where the strategy intervenes on the noise-free path
	// (planned), at observation count last observed step + the schedule step.
	Markers []Marker
	// EstimatedCost is the strategy's expected total cost; equal to its
	// Optimize outcome for the same trajectory, horizon and config.
	EstimatedCost float64
}

// Simulate runs strategy s over horizon steps (cfg.Horizon when horizon < 1)
// with the dynamics and seeding of Optimize. An unknown strategy simulates as
// NoOp; callers validate names with ParseStrategy.
func Simulate(t Trajectory, s Strategy, horizon int, cfg Config) Simulation {
	cfg = cfg.normalized()
	if horizon < 1 {
		horizon = cfg.Horizon
	}
	m := newModel(t, horizon, cfg)
	r := rulesFor(s, m.moderate, m.high, m.critical)
	sim := Simulation{
		Strategy:        s,
		Horizon:         horizon,
		CurrentDrift:    m.d0,
		CurrentVelocity: m.v0,
		Curve:           make([]float64, horizon),
	}
	cs, _ := m.estimate([]rules{r}, cfg.Runs, cfg.Seed, sim.Curve)
	c := cs[0]
	sim.EstimatedCost = c.Total
	for i := range sim.Curve {
		sim.Curve[i] = clamp01(sim.Curve[i] / float64(cfg.Runs))
	}
	last := 0
	if n := len(t.Observed); n > 0 {
		last = t.Observed[n-1].Step
	}
	sched := m.schedule(r)
	sim.Markers = make([]Marker, len(sched))
	for i, st := range sched {
		sim.Markers[i] = Marker{Step: last + st.Step, Type: st.Intervention, Planned: true}
	}
	return sim
}
