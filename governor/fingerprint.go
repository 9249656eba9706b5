package governor

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"
)

// hourKeys are the keys of the temporal distribution ("00".."23").
var hourKeys = func() [24]string {
	var k [24]string
	for h := range k {
		k[h] = string([]byte{byte('0' + h/10), byte('0' + h%10)})
	}
	return k
}()

func hourKey(h int) string { return hourKeys[h] }

// otherKey collects the keys of a distribution past MaxDistinctKeys, so that
// an agent inventing endless action types cannot grow its state without bound.
const otherKey = "(other)"

// targetKey maps a target to the key of the target distribution: the first
// prior category whose word the target contains; otherwise the target's first
// two path segments with identifiers (numbers, long hex strings) dropped and
// the query removed, so "payments/orders/42?x=1" is "payments/orders".
func targetKey(p *Prior, target string) string {
	if p != nil {
		if c := p.targetCategory(target); c != "" {
			return c
		}
	}
	if i := strings.IndexAny(target, "?#"); i >= 0 {
		target = target[:i]
	}
	target = strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(target, "https://"), "http://"))
	var kept []string
	for seg := range strings.SplitSeq(target, "/") {
		if seg == "" || isIdentifier(seg) {
			continue
		}
		kept = append(kept, seg)
		if len(kept) == 2 {
			break
		}
	}
	return strings.Join(kept, "/")
}

// isIdentifier reports whether a path segment looks like an id rather than a
// name: all digits, or 16+ characters of hex and dashes (UUIDs, hashes).
func isIdentifier(seg string) bool {
	digits, hex := true, true
	for _, r := range seg {
		if r < '0' || r > '9' {
			digits = false
		}
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r == '-') {
			hex = false
		}
	}
	return digits || hex && len(seg) >= 16
}

// countKey adds one to key in m, folding new keys into otherKey once m holds
// max keys.
func countKey(m map[string]float64, key string, max int) string {
	if _, ok := m[key]; !ok && len(m) >= max {
		key = otherKey
	}
	m[key]++
	return key
}

// observe adds one evaluated action to the fingerprint and the window.
func (st *agentState) observe(cfg *Config, o observation) {
	if st.Observations == 0 {
		st.FirstObservation = o.Time
	}
	st.Observations++
	o.Type = countKey(st.Actions, o.Type, cfg.MaxDistinctKeys)
	o.Target = countKey(st.Targets, o.Target, cfg.MaxDistinctKeys)
	st.Hours[o.Hour]++
	st.Outcomes[o.Outcome]++
	for _, t := range o.Terms {
		ts := st.Terms[t]
		if ts == nil {
			ts = &termState{Anchored: map[string]float64{}}
			st.Terms[t] = ts
		}
		ts.Occurrences++
		if ts.AnchoredN < cfg.AnchorOccurrences {
			ts.Anchored[o.Type]++
			ts.AnchoredN++
		}
	}
	st.Window.push(o)
}

// blend returns the whole-history distribution: every share = (prior share ×
// w + observed count) / (w + n). Without a prior it is count / n; with
// neither it is empty.
func blend(prior []Share, w float64, counts map[string]float64, n float64) map[string]float64 {
	out := make(map[string]float64, len(prior)+len(counts))
	if len(prior) == 0 {
		w = 0
	}
	den := w + n
	if den == 0 {
		return out
	}
	for _, s := range prior {
		out[s.Key] += s.Share * w / den
	}
	for k, c := range counts {
		out[k] += c / den
	}
	return out
}

// normalize turns counts into shares (empty when the total is 0).
func normalize(counts map[string]float64) map[string]float64 {
	var sum float64
	for _, c := range counts {
		sum += c
	}
	out := make(map[string]float64, len(counts))
	if sum == 0 {
		return out
	}
	for k, c := range counts {
		if c > 0 {
			out[k] = c / sum
		}
	}
	return out
}

// jsd is the Jensen–Shannon divergence of two distributions, base 2: 0 for
// identical, 1 for disjoint. An empty distribution carries no evidence of
// drift: the divergence is 0.
func jsd(p, q map[string]float64) float64 {
	if len(p) == 0 || len(q) == 0 {
		return 0
	}
	// Sum in key order: map order is random, and a float sum taken in a
	// different order differs in its last bits, so identical states would
	// not give identical drift (snapshots, golden traces, thresholds).
	keys := make([]string, 0, len(p)+len(q))
	for k := range p {
		keys = append(keys, k)
	}
	for k := range q {
		if _, ok := p[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var d float64
	for _, k := range keys {
		a, b := p[k], q[k]
		m := (a + b) / 2
		if a > 0 {
			d += a * math.Log2(a/m)
		}
		if b > 0 {
			d += b * math.Log2(b/m)
		}
	}
	return min(max(d/2, 0), 1)
}

// historyRate is the whole-history actions per hour, blended with the prior's
// expected rate.
func (st *agentState) historyRate(cfg *Config, p *Prior, now time.Time) float64 {
	n := float64(st.Observations)
	observed := 0.0
	if n > 0 {
		observed = n / max(now.Sub(st.FirstObservation).Hours(), 1.0/60)
	}
	if p == nil {
		return observed
	}
	return (p.rate()*cfg.PriorWeight + observed*n) / (cfg.PriorWeight + n)
}

// windowRate is the window's actions per hour (spans under a minute count as
// a minute).
func (st *agentState) windowRate() float64 {
	n := st.Window.len()
	if n == 0 {
		return 0
	}
	span := st.Window.last(0).Time.Sub(st.Window.at(0).Time).Hours()
	return float64(n) / max(span, 1.0/60)
}

// fingerprint returns the blended whole-history distributions, largest share
// first.
func (a *agent) fingerprint(cfg *Config) Fingerprint {
	st, p := &a.st, a.contract.prior
	n := float64(st.Observations)
	var pa, pt, ph, po []Share
	if p != nil {
		pa, pt, ph, po = p.Actions, p.Targets, p.hourShares(), p.Outcomes
	}
	return Fingerprint{
		Actions:  sortedShares(blend(pa, cfg.PriorWeight, st.Actions, n)),
		Targets:  sortedShares(blend(pt, cfg.PriorWeight, st.Targets, n)),
		Hours:    sortedShares(blend(ph, cfg.PriorWeight, hourCounts(&st.Hours), n)),
		Outcomes: sortedShares(blend(po, cfg.PriorWeight, st.Outcomes, n)),
		Rate:     st.historyRate(cfg, p, st.LastEvaluation),
	}
}

func hourCounts(h *[24]float64) map[string]float64 {
	m := make(map[string]float64, 24)
	for i, c := range h {
		if c > 0 {
			m[hourKey(i)] = c
		}
	}
	return m
}

func sortedShares(m map[string]float64) []Share {
	out := make([]Share, 0, len(m))
	for k, v := range m {
		out = append(out, Share{Key: k, Share: v})
	}
	slices.SortFunc(out, func(a, b Share) int {
		if c := cmp.Compare(b.Share, a.Share); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

// matchTerms returns the anchor terms (sorted, lower case) that occur in the
// instruction as whole words, case-insensitively.
func matchTerms(terms []string, instruction string) []string {
	if len(terms) == 0 || instruction == "" {
		return nil
	}
	lower := strings.ToLower(instruction)
	var out []string
	for _, t := range terms {
		for i := 0; i <= len(lower)-len(t); {
			j := strings.Index(lower[i:], t)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(t)
			if (start == 0 || !isWordByte(lower[start-1])) && (end == len(lower) || !isWordByte(lower[end])) {
				out = append(out, t)
				break
			}
			i = start + 1
		}
	}
	return out
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 0x80
}
