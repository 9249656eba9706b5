package governor

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestJSD(t *testing.T) {
	cases := []struct {
		name string
		p, q map[string]float64
		want float64 // -1: only the general properties
	}{
		{"identical", map[string]float64{"a": 0.3, "b": 0.7}, map[string]float64{"a": 0.3, "b": 0.7}, 0},
		{"disjoint single keys", map[string]float64{"a": 1}, map[string]float64{"b": 1}, 1},
		{"disjoint several keys", map[string]float64{"a": 0.5, "b": 0.5}, map[string]float64{"c": 0.2, "d": 0.8}, 1},
		{"empty baseline", map[string]float64{"a": 1}, map[string]float64{}, 0},
		{"empty window", map[string]float64{}, map[string]float64{"a": 1}, 0},
		{"both empty", nil, nil, 0},
		// M = {a: .75, b: .25}; (log2(4/3) + .5 log2(2/3) + .5 log2(2)) / 2.
		{"half overlap", map[string]float64{"a": 1}, map[string]float64{"a": 0.5, "b": 0.5},
			(math.Log2(4.0/3) + 0.5*math.Log2(2.0/3) + 0.5) / 2},
		{"partial overlap", map[string]float64{"a": 0.6, "b": 0.3, "c": 0.1}, map[string]float64{"a": 0.1, "b": 0.2, "d": 0.7}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, back := jsd(tc.p, tc.q), jsd(tc.q, tc.p)
			if !approx(got, back) {
				t.Errorf("got jsd(p,q) %v and jsd(q,p) %v, want them equal", got, back)
			}
			if got < 0 || got > 1 {
				t.Errorf("got %v, want within [0, 1]", got)
			}
			if tc.want >= 0 && !approx(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBlend(t *testing.T) {
	prior := []Share{{"read", 0.6}, {"write", 0.3}, {"delete", 0.1}}
	cases := []struct {
		name   string
		prior  []Share
		counts map[string]float64
		n      float64
		want   map[string]float64
	}{
		{"prior plus 50 writes", prior, map[string]float64{"write": 50}, 50, map[string]float64{"read": 0.30, "write": 0.65, "delete": 0.05}},
		{"prior alone", prior, nil, 0, map[string]float64{"read": 0.6, "write": 0.3, "delete": 0.1}},
		{"no prior: observed shares", nil, map[string]float64{"read": 3, "send": 1}, 4, map[string]float64{"read": 0.75, "send": 0.25}},
		{"a new key beside the prior", prior, map[string]float64{"archive": 50}, 50, map[string]float64{"read": 0.3, "write": 0.15, "delete": 0.05, "archive": 0.5}},
		{"neither prior nor observations", nil, nil, 0, map[string]float64{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := blend(tc.prior, 50, tc.counts, tc.n)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, w := range tc.want {
				if !approx(got[k], w) {
					t.Errorf("%s: got %v, want %v", k, got[k], w)
				}
			}
		})
	}
}

func TestFingerprintFromPrior(t *testing.T) {
	cases := []struct {
		name      string
		archetype string
		writes    int
		want      map[string]float64
	}{
		{"data-processing prior alone", "data-processing", 0, map[string]float64{"read": .40, "write": .35, "query": .15, "create": .08, "delete": .02}},
		{"data-processing prior plus 50 writes", "data-processing", 50, map[string]float64{"read": .20, "write": .675, "query": .075, "create": .04, "delete": .01}},
		{"general-purpose: empty fingerprint", "general-purpose", 0, map[string]float64{}},
		{"general-purpose plus writes", "general-purpose", 4, map[string]float64{"write": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", Archetype: tc.archetype})
			for range tc.writes {
				evalAct(t, e, "a", Action{Type: "write", Target: "data/x", Parameters: map[string]any{"k": 1}})
				clk.Advance(10 * time.Second)
			}
			fp := mustStatus(t, e, "a").Fingerprint
			if len(fp.Actions) != len(tc.want) {
				t.Fatalf("got %v, want %v", fp.Actions, tc.want)
			}
			for i, s := range fp.Actions {
				if !approx(s.Share, tc.want[s.Key]) {
					t.Errorf("%s: got %v, want %v", s.Key, s.Share, tc.want[s.Key])
				}
				if i > 0 && s.Share > fp.Actions[i-1].Share {
					t.Errorf("got %v, want largest share first", fp.Actions)
				}
			}
		})
	}
}

func TestFingerprintConfidence(t *testing.T) {
	cfg := DefaultConfig()
	cases := []struct {
		name   string
		n      int
		window int
		want   float64
	}{
		{"no observations", 0, 0, 0},
		{"10 observations", 10, 10, 1 - math.Exp(-10.0/200)},
		{"150 observations exceeds 0.39", 150, 100, 1 - math.Exp(-150.0/200)},
		{"1000 observations", 1000, 100, 1 - math.Exp(-5)},
		{"window fill caps a restored history", 1000, 30, 0.3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newAgentState(&cfg)
			st.Observations = tc.n
			for range tc.window {
				st.Window.push(observation{})
			}
			if got := st.fingerprintConfidence(&cfg); !approx(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("through the engine", func(t *testing.T) {
		e, clk := engineWith(t, Contract{AgentID: "a"})
		allowN(t, e, clk, "a", 150)
		got := mustStatus(t, e, "a").FingerprintConfidence
		if want := 1 - math.Exp(-0.75); !approx(got, want) || got <= 0.39 {
			t.Errorf("got %v, want %v (above 0.39)", got, want)
		}
	})
}

func TestDriftRecomputationCadence(t *testing.T) {
	cases := []struct {
		evals     int
		wantSteps []int
	}{
		{10, nil},
		{19, nil},
		{20, []int{20}},
		{29, []int{20}},
		{30, []int{20, 30}},
		{45, []int{20, 30, 40}},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.evals)+" evaluations", func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", Archetype: "data-processing"})
			for range tc.evals {
				evalAct(t, e, "a", Action{Type: "read", Target: "data/x"})
				clk.Advance(10 * time.Second)
			}
			h := mustDriftHistory(t, e, "a")
			if len(h) != len(tc.wantSteps) {
				t.Fatalf("got %d drift points, want %d", len(h), len(tc.wantSteps))
			}
			for i, p := range h {
				if p.Step != tc.wantSteps[i] {
					t.Errorf("point %d: got step %d, want %d", i, p.Step, tc.wantSteps[i])
				}
			}
		})
	}
	t.Run("dry runs do not count", func(t *testing.T) {
		e, _ := engineWith(t, Contract{AgentID: "a"})
		for range 30 {
			dryAct(t, e, "a", readAct())
		}
		if h := mustDriftHistory(t, e, "a"); len(h) != 0 {
			t.Errorf("got %d drift points, want 0", len(h))
		}
	})
}

func TestDriftRisesWhenReadsBecomeDeletes(t *testing.T) {
	e, clk := engineWith(t, Contract{AgentID: "a"})
	for i := range 220 {
		typ := "read"
		if i >= 150 {
			typ = "delete"
		}
		evalAct(t, e, "a", Action{Type: typ, Target: "data/x", Parameters: map[string]any{"k": 1}})
		clk.Advance(10 * time.Second)
	}
	var prev float64
	for _, p := range mustDriftHistory(t, e, "a") {
		switch {
		case p.Step <= 150:
			if p.Drift.Action != 0 {
				t.Errorf("step %d (reads only): got action drift %v, want 0", p.Step, p.Drift.Action)
			}
		default:
			if p.Drift.Action <= prev {
				t.Errorf("step %d: got action drift %v, want more than %v", p.Step, p.Drift.Action, prev)
			}
		}
		prev = p.Drift.Action
	}
	if prev < 0.1 {
		t.Errorf("got final action drift %v, want at least 0.1", prev)
	}
}

func TestSeverity(t *testing.T) {
	def := DefaultConfig().Thresholds
	cases := []struct {
		name    string
		overall float64
		factor  float64
		want    string
	}{
		{"zero", 0, 1, SeverityNone},
		{"just below low", 0.0999, 1, SeverityNone},
		{"low", 0.10, 1, SeverityLow},
		{"moderate", 0.20, 1, SeverityModerate},
		{"high", 0.40, 1, SeverityHigh},
		{"critical", 0.60, 1, SeverityCritical},
		{"maximum", 1, 1, SeverityCritical},
		{"tightened by half: 0.05 is low", 0.05, 0.5, SeverityLow},
		{"tightened by half: 0.1 is moderate", 0.10, 0.5, SeverityModerate},
		{"tightened by half: 0.2 is high", 0.20, 0.5, SeverityHigh},
		{"tightened by half: 0.3 is critical", 0.30, 0.5, SeverityCritical},
		{"loosened by two: 0.3 is low", 0.30, 2, SeverityLow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := severity(tc.overall, def.Scale(tc.factor)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSeverityWithThresholdFactorOverlay(t *testing.T) {
	cases := []struct {
		name    string
		overlay *Overlay
		want    string
		wantTh  Thresholds
	}{
		{"no overlay", nil, SeverityModerate, Thresholds{0.10, 0.20, 0.40, 0.60}},
		{"factor 0 means 1", &Overlay{}, SeverityModerate, Thresholds{0.10, 0.20, 0.40, 0.60}},
		{"tightened by half", &Overlay{ThresholdFactor: 0.5}, SeverityHigh, Thresholds{0.05, 0.10, 0.20, 0.30}},
		{"loosened by two", &Overlay{ThresholdFactor: 2}, SeverityLow, Thresholds{0.20, 0.40, 0.80, 1.20}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := engineWith(t, Contract{AgentID: "a"})
			withState(t, e, "a", func(st *agentState) { st.Drift.Overall = 0.25 })
			if tc.overlay != nil {
				e.SetOverlays(Overlays{"a": tc.overlay})
			}
			st := mustStatus(t, e, "a")
			if st.Severity != tc.want {
				t.Errorf("got severity %s, want %s", st.Severity, tc.want)
			}
			th := st.Thresholds
			if !approx(th.Low, tc.wantTh.Low) || !approx(th.Moderate, tc.wantTh.Moderate) || !approx(th.High, tc.wantTh.High) || !approx(th.Critical, tc.wantTh.Critical) {
				t.Errorf("got thresholds %+v, want %+v", th, tc.wantTh)
			}
			if d := dryAct(t, e, "a", readAct()); d.State.Severity != tc.want {
				t.Errorf("got decision severity %s, want %s", d.State.Severity, tc.want)
			}
		})
	}
}

// erosionFor is the trust change of one drift recomputation (section 4).
func erosionFor(cfg *Config, overall, conf float64) float64 {
	for _, b := range cfg.Erosion {
		if overall >= b.At {
			return b.Delta * conf
		}
	}
	return 0
}

func TestDriftErosionOncePerRecomputation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TrustAllowDelta = 0.002 // keeps trust well below its ceiling
	e, clk := newTestEngineCfg(t, cfg)
	mustContract(t, e, Contract{AgentID: "a", Archetype: "data-processing"})
	verdictDelta := map[Verdict]float64{Allow: cfg.TrustAllowDelta, Deny: cfg.TrustDenyDelta}
	wantDriftEvents := 0
	for i := 1; i <= 60; i++ {
		before := mustStatus(t, e, "a").Trust
		d := evalAct(t, e, "a", Action{Type: "archive", Target: "x/y", Parameters: map[string]any{"k": 1}})
		clk.Advance(10 * time.Second)
		want := before + verdictDelta[d.Verdict]
		recomputed := i >= 20 && i%10 == 0
		if recomputed {
			h := mustDriftHistory(t, e, "a")
			p := h[len(h)-1]
			if p.Step != i {
				t.Fatalf("evaluation %d: got last drift step %d, want %d", i, p.Step, i)
			}
			er := erosionFor(&cfg, p.Drift.Overall, p.Confidence)
			want += er
			if math.Abs(er) > cfg.TrustEventMin {
				wantDriftEvents++
			}
		}
		if got := mustStatus(t, e, "a").Trust; !approxTol(got, want, 2e-9) {
			t.Fatalf("evaluation %d (recomputed %v): got trust %v, want %v", i, recomputed, got, want)
		}
	}
	var drift int
	for _, ev := range mustTrustEvents(t, e, "a") {
		if ev.Source == "drift" {
			drift++
			if ev.After >= ev.Before || !strings.Contains(ev.Reason, "erosion") {
				t.Errorf("got drift event %+v, want a decrease for erosion", ev)
			}
		}
	}
	if wantDriftEvents == 0 {
		t.Fatalf("setup: no recomputation eroded trust by more than %v", cfg.TrustEventMin)
	}
	if drift != wantDriftEvents {
		t.Errorf("got %d drift trust events, want %d (one per eroding recomputation)", drift, wantDriftEvents)
	}
}

func TestDriftRecovery(t *testing.T) {
	e, clk := engineWith(t, Contract{AgentID: "a"})
	allowN(t, e, clk, "a", 19)
	// Drift had peaked at 0.2; this agent's behaviour is perfectly steady,
	// so the recomputation at 20 finds drift below 0.10.
	withState(t, e, "a", func(st *agentState) { st.PeakOverall = 0.2 })
	before := mustStatus(t, e, "a").Trust
	evalAct(t, e, "a", readAct())
	h := mustDriftHistory(t, e, "a")
	if len(h) != 1 || h[0].Drift.Overall >= 0.10 {
		t.Fatalf("setup: got drift history %+v, want one point below 0.10", h)
	}
	if got, want := mustStatus(t, e, "a").Trust, before+0.01+0.003; !approx(got, want) {
		t.Errorf("got trust %v, want %v (ALLOW and recovery)", got, want)
	}
	evs := mustTrustEvents(t, e, "a")
	if last := evs[len(evs)-1]; last.Source != "drift" || !approx(last.After-last.Before, 0.003) {
		t.Errorf("got last event %+v, want a drift recovery of +0.003", last)
	}
	// Recovery happens once: the peak is reset.
	allowN(t, e, clk, "a", 10)
	for _, ev := range mustTrustEvents(t, e, "a")[len(evs):] {
		if ev.Source == "drift" {
			t.Errorf("got a second drift event %+v, want recovery applied once", ev)
		}
	}
}

func TestDriftAlerts(t *testing.T) {
	archive := Action{Type: "archive", Target: "x/y", Parameters: map[string]any{"k": 1}}
	cases := []struct {
		name        string
		ack         bool     // acknowledge after evaluation 20 (the first recomputation)
		factorFirst float64  // threshold factor up to evaluation 20
		factorLater float64  // threshold factor from evaluation 21
		want        []string // severities of the alerts after 30 evaluations
		wantAcked   []bool
	}{
		{"same severity is deduplicated", false, 1, 1, []string{SeverityModerate}, []bool{false}},
		{"acknowledged alerts do not deduplicate", true, 1, 1, []string{SeverityModerate, SeverityModerate}, []bool{true, false}},
		{"higher severity is raised", false, 1, 0.5, []string{SeverityModerate, SeverityHigh}, []bool{false, false}},
		{"lower severity is deduplicated", false, 0.5, 1, []string{SeverityCritical}, []bool{false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, clk := engineWith(t, Contract{AgentID: "a", Archetype: "data-processing"})
			e.SetOverlays(Overlays{"a": {ThresholdFactor: tc.factorFirst}})
			for i := 1; i <= 30; i++ {
				evalAct(t, e, "a", archive)
				clk.Advance(10 * time.Second)
				if i == 20 {
					if tc.ack {
						if err := e.AcknowledgeAlerts("a"); err != nil {
							t.Fatal(err)
						}
					}
					e.SetOverlays(Overlays{"a": {ThresholdFactor: tc.factorLater}})
				}
			}
			h := mustDriftHistory(t, e, "a")
			if len(h) != 2 || h[0].Drift.Overall < 0.2 || h[0].Drift.Overall >= 0.4 || h[1].Drift.Overall < 0.2 || h[1].Drift.Overall >= 0.4 {
				t.Fatalf("setup: got drift history %+v, want two points in [0.2, 0.4)", h)
			}
			alerts := mustStatus(t, e, "a").Alerts
			if len(alerts) != len(tc.want) {
				t.Fatalf("got alerts %+v, want severities %v", alerts, tc.want)
			}
			for i, a := range alerts {
				if a.Severity != tc.want[i] || a.Acknowledged != tc.wantAcked[i] {
					t.Errorf("alert %d: got %s acknowledged %v, want %s acknowledged %v", i, a.Severity, a.Acknowledged, tc.want[i], tc.wantAcked[i])
				}
			}
		})
	}
	t.Run("no alert below moderate", func(t *testing.T) {
		e, clk := engineWith(t, Contract{AgentID: "a", Archetype: "data-processing"})
		e.SetOverlays(Overlays{"a": {ThresholdFactor: 2}})
		for range 30 {
			evalAct(t, e, "a", archive)
			clk.Advance(10 * time.Second)
		}
		if alerts := mustStatus(t, e, "a").Alerts; len(alerts) != 0 {
			t.Errorf("got alerts %+v, want none", alerts)
		}
	})
}

func TestDistinctKeysFoldIntoOther(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxDistinctKeys = 3
	e, clk := newTestEngineCfg(t, cfg)
	mustContract(t, e, Contract{AgentID: "a"})
	for i := range 6 {
		evalAct(t, e, "a", Action{Type: "tool_" + strconv.Itoa(i), Target: "t" + strconv.Itoa(i), Parameters: map[string]any{"k": 1}})
		clk.Advance(time.Second)
	}
	fp := mustStatus(t, e, "a").Fingerprint
	for name, dist := range map[string][]Share{"actions": fp.Actions, "targets": fp.Targets} {
		got := map[string]float64{}
		for _, s := range dist {
			got[s.Key] = s.Share
		}
		// The first 3 keys are kept; the 3 later ones share otherKey.
		if len(got) != 4 || !approx(got[otherKey], 3.0/6) {
			t.Errorf("%s: got %v, want 3 keys at 1/6 and %s at 3/6", name, got, otherKey)
		}
		for k, v := range got {
			if k != otherKey && !approx(v, 1.0/6) {
				t.Errorf("%s: got %s at %v, want 1/6", name, k, v)
			}
		}
	}
}
