package ledger

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/vigilhq/vigil/governor"
)

// TimeFormat is the entry timestamp format: RFC 3339, UTC, milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// Entry is one ledger entry as API.md section 8 fixes it: self-contained,
// so that a decision can be reconstructed without any other system. Members
// whose shape varies (step states, the contract, action-to-pass) are kept as
// raw JSON so that what was recorded is exactly what is read back.
type Entry struct {
	AgentID                string                          `json:"agent_id"`
	Sequence               int64                           `json:"sequence"`
	Timestamp              string                          `json:"timestamp"`
	ActionID               string                          `json:"action_id"`
	Action                 Action                          `json:"action"`
	Verdict                Verdict                         `json:"verdict"`
	Pipeline               []Step                          `json:"pipeline"`
	DimensionScores        []governor.DimensionScore       `json:"dimension_scores"`
	BehavioralState        governor.BehavioralState        `json:"behavioral_state"`
	ContractSnapshot       json.RawMessage                 `json:"contract_snapshot"`
	SemanticContext        governor.SemanticContext        `json:"semantic_context"`
	CausalLinks            []CausalLink                    `json:"causal_links"`
	ActionToPass           json.RawMessage                 `json:"action_to_pass"`
	Reversibility          Reversibility                   `json:"reversibility"`
	CrossDimensional       governor.CrossDimensional       `json:"cross_dimensional"`
	ContextualModification governor.ContextualModification `json:"contextual_modification"`
	Directives             []string                        `json:"directives"`
	PrevHash               string                          `json:"prev_hash"`
	// Hash is empty in the hashed form and set in the exported form.
	Hash string `json:"hash,omitempty"`
}

// Action is the recorded action.
type Action struct {
	Type       string         `json:"type"`
	Target     string         `json:"target"`
	Parameters map[string]any `json:"parameters"`
	// Source: "proxy", "api" or "simulation".
	Source string `json:"source"`
	// Method is the HTTP method of a proxied call (omitted otherwise).
	Method string `json:"method,omitempty"`
}

// Verdict is the recorded verdict.
type Verdict struct {
	Decision      string   `json:"decision"`
	UCS           float64  `json:"ucs"`
	Tier          int      `json:"tier"`
	Reasoning     string   `json:"reasoning"`
	Vetoes        []string `json:"vetoes"`
	Modifications []string `json:"modifications,omitempty"`
}

// Step is one recorded pipeline step.
type Step struct {
	Step           string          `json:"step"`
	InputState     json.RawMessage `json:"input_state"`
	OutputState    json.RawMessage `json:"output_state"`
	DecidedVerdict bool            `json:"decided_verdict"`
	DurationUS     int64           `json:"duration_us"`
}

// CausalLink ties the entry to an earlier entry of the agent. Sequence is 0
// when the earlier decision is not in the ledger (a dry run, or an entry of
// another process that this one has not seen).
type CausalLink struct {
	Sequence    int64   `json:"sequence"`
	ActionID    string  `json:"action_id"`
	Kind        string  `json:"kind"`
	Influence   float64 `json:"influence"`
	TrustBefore float64 `json:"trust_before"`
	TrustAfter  float64 `json:"trust_after"`
}

// Reversibility is the recorded reversibility assessment.
type Reversibility struct {
	Level       string `json:"level"`
	ForcedTier3 bool   `json:"forced_tier3"`
}

// entryOut is an Entry as it is encoded: the same members, but the step
// states, the contract and action-to-pass are the governor's own values, so
// that each is encoded once, straight into the entry.
type entryOut struct {
	AgentID                string                          `json:"agent_id"`
	Sequence               int64                           `json:"sequence"`
	Timestamp              string                          `json:"timestamp"`
	ActionID               string                          `json:"action_id"`
	Action                 Action                          `json:"action"`
	Verdict                Verdict                         `json:"verdict"`
	Pipeline               []stepOut                       `json:"pipeline"`
	DimensionScores        []governor.DimensionScore       `json:"dimension_scores"`
	BehavioralState        governor.BehavioralState        `json:"behavioral_state"`
	ContractSnapshot       *governor.Contract              `json:"contract_snapshot"`
	SemanticContext        governor.SemanticContext        `json:"semantic_context"`
	CausalLinks            []CausalLink                    `json:"causal_links"`
	ActionToPass           *governor.ActionToPass          `json:"action_to_pass"`
	Reversibility          Reversibility                   `json:"reversibility"`
	CrossDimensional       governor.CrossDimensional       `json:"cross_dimensional"`
	ContextualModification governor.ContextualModification `json:"contextual_modification"`
	Directives             []string                        `json:"directives"`
	PrevHash               string                          `json:"prev_hash"`
}

type stepOut struct {
	Step           string `json:"step"`
	InputState     any    `json:"input_state"`
	OutputState    any    `json:"output_state"`
	DecidedVerdict bool   `json:"decided_verdict"`
	DurationUS     int64  `json:"duration_us"`
}

// assemble builds the entry of a decision (without sequence and prev_hash,
// which sealing fills in). resolve maps an action id of the agent to its
// sequence (0 when unknown).
func assemble(d *governor.Decision, resolve func(actionID string) int64) *entryOut {
	e := &entryOut{}
	assembleInto(e, d, resolve)
	return e
}

// assembleInto is assemble into e, reusing the capacity of its pipeline and
// causal links (an append's scratch entry; release clears it after use).
func assembleInto(e *entryOut, d *governor.Decision, resolve func(actionID string) int64) {
	*e = entryOut{
		AgentID:   d.AgentID,
		Timestamp: d.Timestamp.UTC().Format(TimeFormat),
		ActionID:  d.ActionID,
		Action: Action{Type: d.Action.Type, Target: d.Action.Target, Parameters: safeNumbers(d.Action.Parameters),
			Source: d.Action.Source, Method: d.Action.Method},
		Verdict: Verdict{Decision: d.Verdict.String(), UCS: d.UCS, Tier: d.Tier, Reasoning: d.Reasoning,
			Vetoes: nonNil(d.Vetoes), Modifications: d.Modifications},
		DimensionScores:        d.Scores,
		BehavioralState:        d.State,
		ContractSnapshot:       d.Contract,
		SemanticContext:        d.Semantic,
		ActionToPass:           &d.ToPass,
		Reversibility:          Reversibility{Level: d.Reversibility.Level.String(), ForcedTier3: d.Reversibility.ForcedTier3},
		CrossDimensional:       d.CrossDimensional,
		ContextualModification: d.Contextual,
		Directives:             nonNil(d.Directives),
		CausalLinks:            slices.Grow(e.CausalLinks[:0], len(d.CausalLinks)),
		Pipeline:               slices.Grow(e.Pipeline[:0], len(d.Pipeline)),
	}
	if e.Action.Source == "" {
		e.Action.Source = "api"
	}
	if e.Action.Parameters == nil {
		e.Action.Parameters = map[string]any{}
	}
	if e.DimensionScores == nil {
		e.DimensionScores = []governor.DimensionScore{}
	}
	if e.ContractSnapshot == nil {
		e.ContractSnapshot = &governor.Contract{AgentID: d.AgentID}
	}
	for _, l := range d.CausalLinks {
		e.CausalLinks = append(e.CausalLinks, CausalLink{Sequence: resolve(l.ActionID), ActionID: l.ActionID, Kind: l.Kind,
			Influence: l.Influence, TrustBefore: l.TrustBefore, TrustAfter: l.TrustAfter})
	}
	for _, s := range d.Pipeline {
		e.Pipeline = append(e.Pipeline, stepOut{Step: s.Name, InputState: s.Input, OutputState: s.Output,
			DecidedVerdict: s.Decided, DurationUS: s.Duration.Microseconds()})
	}
}

// release clears e, keeping the capacity of its slices, so that a pooled
// scratch entry does not keep a decision alive.
func (e *entryOut) release() {
	links, steps := e.CausalLinks, e.Pipeline
	clear(links[:cap(links)])
	clear(steps[:cap(steps)])
	*e = entryOut{CausalLinks: links[:0], Pipeline: steps[:0]}
}

// newEntry returns the decoded Entry of a decision, as a reader would see it
// (tests and tools; the ledger itself encodes assemble's value).
func newEntry(d *governor.Decision, resolve func(actionID string) int64) (*Entry, error) {
	raw, err := json.Marshal(assemble(d, resolve))
	if err != nil {
		return nil, err
	}
	var e Entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// maxSafeInteger is 2^53: integers beyond it do not survive a round trip
// through an IEEE double, which is how RFC 8785 reads numbers.
const maxSafeInteger = 1 << 53

// safeNumbers copies parameters, turning integers that could exceed 2^53
// into decimal strings, so that the hashed content says exactly what was
// sent (API.md: such integers are strings in hashed content).
func safeNumbers(p map[string]any) map[string]any {
	if p == nil || !needsSafe(p) {
		return p // nothing to change: the entry may refer to the decision's own map
	}
	out := make(map[string]any, len(p))
	for k, v := range p {
		out[k] = safeValue(v)
	}
	return out
}

// needsSafe reports whether safeValue would change anything in v.
func needsSafe(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, y := range x {
			if needsSafe(y) {
				return true
			}
		}
		return false
	case []any:
		return slices.ContainsFunc(x, needsSafe)
	case json.Number, int, uint, int64, uint64:
		return true // rare in decoded parameters; safeValue decides
	case float64:
		return math.IsNaN(x) || math.IsInf(x, 0)
	}
	return false
}

func safeValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return safeNumbers(x)
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = safeValue(y)
		}
		return out
	case json.Number:
		if i, err := x.Int64(); err == nil {
			if i > maxSafeInteger || i < -maxSafeInteger {
				return x.String()
			}
			return i
		}
		if f, err := x.Float64(); err == nil && !math.IsInf(f, 0) {
			if f == math.Trunc(f) && math.Abs(f) > maxSafeInteger {
				return x.String() // an integer too large for int64
			}
			return f
		}
		return x.String()
	case int:
		return safeValue(int64(x))
	case uint:
		return safeValue(uint64(x))
	case int64:
		if x > maxSafeInteger || x < -maxSafeInteger {
			return strconv.FormatInt(x, 10)
		}
	case uint64:
		if x > maxSafeInteger {
			return strconv.FormatUint(x, 10)
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64) // JSON has no NaN or infinity
		}
	}
	return v
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ParseTime reads an entry timestamp.
func ParseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }
