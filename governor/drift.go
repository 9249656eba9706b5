package governor

import (
	"maps"
	"slices"
	"strconv"
	"time"
)

// Severity names, in increasing order.
const (
	SeverityNone     = "none"
	SeverityLow      = "low"
	SeverityModerate = "moderate"
	SeverityHigh     = "high"
	SeverityCritical = "critical"
)

// severity maps overall drift onto the (effective) thresholds.
func severity(overall float64, t Thresholds) string {
	switch {
	case overall >= t.Critical:
		return SeverityCritical
	case overall >= t.High:
		return SeverityHigh
	case overall >= t.Moderate:
		return SeverityModerate
	case overall >= t.Low:
		return SeverityLow
	}
	return SeverityNone
}

func severityRank(s string) int {
	switch s {
	case SeverityLow:
		return 1
	case SeverityModerate:
		return 2
	case SeverityHigh:
		return 3
	case SeverityCritical:
		return 4
	}
	return 0
}

// driftDue reports whether the observation just added triggers a drift
// recomputation: every DriftEvery observations once the window holds
// DriftMinWindow.
func (st *agentState) driftDue(cfg *Config) bool {
	return st.Window.len() >= cfg.DriftMinWindow && st.Observations%cfg.DriftEvery == 0
}

// computeDrift compares the window with the whole-history fingerprint, per
// distribution (GOVERNOR.md section 8), and the anchor terms' window use with
// their anchored use (section 8.1). It updates the terms' drift.
func (st *agentState) computeDrift(cfg *Config, p *Prior, now time.Time) (DriftScores, float64) {
	n := float64(st.Observations)
	var pa, pt, ph, po []Share
	weights := defaultDriftWeights
	if p != nil {
		pa, pt, ph, po = p.Actions, p.Targets, p.hourShares(), p.Outcomes
		weights = p.DriftWeights
	}
	wa, wt, wo := map[string]float64{}, map[string]float64{}, map[string]float64{}
	var wh [24]float64
	termTypes := map[string]map[string]float64{}
	for i := range st.Window.len() {
		o := st.Window.at(i)
		wa[o.Type]++
		wt[o.Target]++
		wh[o.Hour]++
		wo[o.Outcome]++
		for _, t := range o.Terms {
			if termTypes[t] == nil {
				termTypes[t] = map[string]float64{}
			}
			termTypes[t][o.Type]++
		}
	}
	var d DriftScores
	d.Action = jsd(normalize(wa), blend(pa, cfg.PriorWeight, st.Actions, n))
	d.Target = jsd(normalize(wt), blend(pt, cfg.PriorWeight, st.Targets, n))
	d.Outcome = jsd(normalize(wo), blend(po, cfg.PriorWeight, st.Outcomes, n))
	hoursDrift := jsd(normalize(hourCounts(&wh)), blend(ph, cfg.PriorWeight, hourCounts(&st.Hours), n))
	base := st.historyRate(cfg, p, now)
	rateDrift := min(abs(st.windowRate()-base)/max(base, 1), 1)
	d.Temporal = 0.6*hoursDrift + 0.4*rateDrift

	// Semantic: per-term JSD, aggregated by the terms' window occurrences.
	var semSum, semW float64
	for _, term := range slices.Sorted(maps.Keys(st.Terms)) { // in order: a deterministic sum
		ts := st.Terms[term]
		types := termTypes[term]
		if len(types) == 0 {
			continue
		}
		ts.Drift = jsd(normalize(ts.Anchored), normalize(types))
		var occ float64
		for _, c := range types {
			occ += c
		}
		semSum += ts.Drift * occ
		semW += occ
	}
	num := weights.Action*d.Action + weights.Target*d.Target + weights.Temporal*d.Temporal + weights.Outcome*d.Outcome
	den := weights.Action + weights.Target + weights.Temporal + weights.Outcome
	if semW > 0 {
		d.Semantic = semSum / semW
		num += weights.Semantic * d.Semantic
		den += weights.Semantic
	}
	if den > 0 {
		d.Overall = min(max(num/den, 0), 1)
	}
	return d, st.fingerprintConfidence(cfg)
}

// recomputeDrift stores a new drift reading, appends it to the history,
// erodes (or recovers) trust once, and raises a deduplicated alert.
func (st *agentState) recomputeDrift(cfg *Config, p *Prior, th Thresholds, now time.Time) {
	d, conf := st.computeDrift(cfg, p, now)
	st.Drift, st.DriftConfidence = d, conf
	st.DriftHistory.push(DriftPoint{Step: st.Observations, Time: now, Drift: d, Confidence: conf})

	st.PeakOverall = max(st.PeakOverall, d.Overall)
	eroded := false
	for _, b := range cfg.Erosion {
		if d.Overall >= b.At {
			st.adjustTrust(cfg, now, b.Delta*conf, "drift", "drift erosion at overall "+strconv.FormatFloat(d.Overall, 'f', 3, 64))
			eroded = true
			break
		}
	}
	if !eroded && d.Overall < cfg.RecoveryBelow && st.PeakOverall >= cfg.RecoveryAfter {
		st.adjustTrust(cfg, now, cfg.RecoveryDelta, "drift", "drift recovered")
		st.PeakOverall = d.Overall
	}

	sev := severity(d.Overall, th)
	if severityRank(sev) < severityRank(SeverityModerate) {
		return
	}
	for i := range st.Alerts.len() {
		if a := st.Alerts.at(i); !a.Acknowledged && severityRank(a.Severity) >= severityRank(sev) {
			return
		}
	}
	st.Alerts.push(DriftAlert{ID: "alert_" + strconv.Itoa(st.Observations), Severity: sev, Overall: d.Overall, RaisedAt: now})
}

// reAnchor resets a term's anchored distribution to its use in the current
// window (GOVERNOR.md 8.1). With no use in the window, the term anchors anew on
// its next occurrences.
func (st *agentState) reAnchor(cfg *Config, term string) {
	ts := st.Terms[term]
	if ts == nil {
		ts = &termState{}
		st.Terms[term] = ts
	}
	ts.Anchored, ts.AnchoredN, ts.Drift = map[string]float64{}, 0, 0
	for i := range st.Window.len() {
		o := st.Window.at(i)
		for _, t := range o.Terms {
			if t == term {
				ts.Anchored[o.Type]++
			}
		}
	}
	if len(ts.Anchored) > 0 {
		ts.AnchoredN = cfg.AnchorOccurrences
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
