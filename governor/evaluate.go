package governor

import (
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Evaluate decides one action of one agent and returns the decision with its
// full trace. Unless req.DryRun is set, the agent's state is updated (trust,
// fingerprint, drift, history); the caller records the ledger entry.
//
// Errors: ErrUnknownAgent for an agent without a contract; ErrUndecidable when
// the evaluation failed (a recovered panic). On any error the caller must
// refuse the action.
func (e *Engine) Evaluate(req Request) (d *Decision, err error) {
	start := time.Now()
	a := e.agent(req.AgentID)
	if a == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownAgent, req.AgentID)
	}
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("%w: agent %q: %v", ErrUndecidable, req.AgentID, r)
		}
	}()
	ov := e.Overlay(req.AgentID)
	now := e.clock().UTC()
	act := req.Action
	if act.ID == "" {
		act.ID = newActionID()
	}
	blk := new(decisionBlock)
	d = &blk.d
	*d = Decision{ActionID: act.ID, AgentID: req.AgentID, Timestamp: now, Action: act, Vetoes: []string{}, Directives: []string{}}
	if ov != nil {
		if ov.Directives != nil {
			d.Directives = ov.Directives
		}
		d.Advisory = ov.Advisory
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	ev := &evaluation{
		cfg: &e.cfg, cc: a.contract, st: &a.st, ov: ov, rules: e.rules.Load(), req: &req,
		act: &d.Action, d: d, now: now, inflight: a.inflight.Load(), mark: start,
		deliberators: e.deliberators, blk: blk, noTrace: e.noTrace,
	}
	ev.thresholds = e.cfg.Thresholds.Scale(ov.thresholdFactor())
	d.Contract = &a.contract.spec
	d.Pipeline = blk.steps[:0]

	if !ev.precheck() {
		ev.run()
		if !req.DryRun {
			ev.commit()
		}
	}
	ev.fillState()
	d.Elapsed = time.Since(start)
	return d, nil
}

// evaluation is the working state of one Evaluate call. It lives while the
// agent's lock is held.
type evaluation struct {
	cfg          *Config
	cc           *compiledContract
	st           *agentState
	ov           *Overlay
	rules        *ruleSet
	req          *Request
	act          *Action
	d            *Decision
	now          time.Time
	inflight     int64
	mark         time.Time
	deliberators []Deliberator
	thresholds   Thresholds
	blk          *decisionBlock
	noTrace      bool

	baseWeights [numDims]float64
	weightDelta [numDims]float64
	weights     [numDims]float64
	trust       float64 // after decay
	trustDelta  float64 // contextual modifier
	effTrust    float64 // used by this evaluation
	direction   string
	severity    string

	rev              Reversibility
	vetoes           []string
	failedInvariants []string
	terms            []string
	resubmittedOf    string
	approvalUsed     bool
	digest           string
	cel              map[string]any
}

func (ev *evaluation) step(name string, in, out any, decided bool) {
	if ev.noTrace {
		return
	}
	now := time.Now()
	ev.d.Pipeline = append(ev.d.Pipeline, Step{Name: name, Input: in, Output: out, Decided: decided, Duration: now.Sub(ev.mark)})
	ev.mark = now
}

func (ev *evaluation) decide(v Verdict, tier int, reasoning string) {
	ev.d.Verdict, ev.d.Tier, ev.d.Reasoning = v, tier, reasoning
}

func (ev *evaluation) celInput() map[string]any {
	if ev.cel == nil {
		ev.cel = celInput(ev.act)
	}
	return ev.cel
}

func (ev *evaluation) actionDigest() string {
	if ev.digest == "" {
		ev.digest = ActionDigest(ev.d.AgentID, ev.act)
	}
	return ev.digest
}

// precheck runs quarantine and suspension; it reports whether one decided.
func (ev *evaluation) precheck() bool {
	ov := ev.ov
	if ov == nil || !ov.Quarantined && !ov.Suspended {
		return false
	}
	tr := &ev.blk.tr
	tr.pre = PrecheckState{Quarantined: ov.Quarantined, Suspended: ov.Suspended, Directives: ev.d.Directives}
	in := &tr.pre
	if ov.Quarantined {
		ev.decide(Escalate, 0, "The agent is quarantined: every action goes to human review before any other check.")
		ev.d.ToPass.Requires = "human approval, or release of the quarantine"
		tr.preOut = VerdictState{Verdict: "ESCALATE"}
		ev.step(StepQuarantine, in, &tr.preOut, true)
		return true
	}
	ev.decide(Suspend, 0, "The agent is suspended: no action is allowed until an operator restores it.")
	ev.d.ToPass.Requires = "an operator lifting the suspension"
	tr.preOut = VerdictState{Verdict: "SUSPEND"}
	ev.step(StepSuspension, in, &tr.preOut, true)
	return true
}

// run executes pipeline steps 1 to 11, stopping at the deciding one.
func (ev *evaluation) run() {
	cfg, st, d, tr := ev.cfg, ev.st, ev.d, &ev.blk.tr
	for i, spec := range dimensionOrder {
		ev.baseWeights[i] = cfg.Weights[spec.name]
	}
	if st.Prev != nil {
		p := st.Prev
		d.CausalLinks = append(d.CausalLinks, CausalLink{ActionID: p.ActionID, Kind: "predecessor",
			Influence: p.TrustAfter - p.TrustBefore, TrustBefore: p.TrustBefore, TrustAfter: p.TrustAfter})
	}
	ev.terms = matchTerms(ev.cc.anchors, ev.req.Context.Instruction)

	// 1. trust_decay
	var idle float64
	ev.trust, idle = st.decayedTrust(cfg, ev.now)
	tr.decayIn, tr.decayOut = TrustDecayInput{Trust: st.Trust, IdleSeconds: idle}, TrustState{Trust: ev.trust}
	ev.step(StepTrustDecay, &tr.decayIn, &tr.decayOut, false)

	// 2. contextual_modifier
	ev.direction = st.trustDirection(cfg)
	ev.severity = severity(st.Drift.Overall, ev.thresholds)
	if st.Denied.len() > 0 {
		dg := ev.actionDigest()
		for i := range st.Denied.len() {
			if da := st.Denied.last(i); da.Digest == dg {
				ev.resubmittedOf = da.ActionID
				d.CausalLinks = append(d.CausalLinks, CausalLink{ActionID: da.ActionID, Kind: "resubmission", Influence: -0.05, TrustBefore: ev.trust, TrustAfter: ev.trust})
				break
			}
		}
	}
	ev.contextualModifier()
	c := &ev.req.Context
	tr.ctxIn = ContextInput{Origin: c.Origin, Mode: c.Mode, Urgency: c.Urgency, DelegationDepth: c.DelegationDepth, ChildAgents: c.ChildAgents,
		InputCategory: c.InputCategory, Resubmission: ev.resubmittedOf != "", TrustDirection: ev.direction, DriftSeverity: ev.severity, Trust: ev.trust}
	tr.ctxOut = ContextOutput{WeightAdjustments: len(d.Contextual.WeightAdjustments), TrustModifier: ev.trustDelta, EffectiveTrust: ev.effTrust}
	ev.step(StepContextualModifier, &tr.ctxIn, &tr.ctxOut, false)

	// 3. reversibility
	var why string
	ev.rev, why = assessReversibility(ev.act)
	d.Reversibility.Level = ev.rev
	tr.revIn = ReversibilityInput{Type: ev.act.Type, Method: ev.act.Method, Declared: ev.act.Reversibility.String()}
	tr.revOut = ReversibilityOutput{Level: ev.rev, Reason: why}
	ev.step(StepReversibility, &tr.revIn, &tr.revOut, false)

	// 4. dimension_eval
	ev.evalDimensions()
	nInv := 0
	if ev.ov != nil {
		nInv = len(ev.ov.Invariants)
	}
	low := lowest(d.Scores)
	tr.dimIn = DimensionInput{Dimensions: numDims, Invariants: nInv, Rules: len(ev.rules.compiled)}
	tr.dimOut = DimensionOutput{Vetoes: ev.vetoesOrEmpty(), FailedInvariants: ev.failedInvariants, Lowest: low}
	ev.step(StepDimensionEval, &tr.dimIn, &tr.dimOut, false)

	// 5. cross_dimensional
	signals := crossDimensional(d.Scores, ev.effTrust)
	d.CrossDimensional = CrossDimensional{Count: len(signals), Signals: signals}
	if signals == nil {
		d.CrossDimensional.Signals = []Signal{}
	}
	tr.crossIn, tr.crossOut = CrossInput{Patterns: len(patterns), Trust: ev.effTrust}, CrossOutput{Signals: d.CrossDimensional.Signals}
	ev.step(StepCrossDimensional, &tr.crossIn, &tr.crossOut, false)

	// 6. tier1
	if len(ev.vetoes) > 0 {
		d.Vetoes = ev.vetoes
		if len(ev.vetoes) == 1 && ev.vetoes[0] == DimHumanOverride {
			ev.decide(Escalate, 1, "Tier 1: "+d.Scores[dimHumanOverride].Reasoning+"; the action is held for a human.")
		} else {
			ev.decide(Deny, 1, "Tier 1: vetoed by "+ev.vetoReasons()+".")
		}
		tr.t1In, tr.t1Out = VetoInput{Vetoes: ev.vetoes}, VerdictState{Verdict: d.Verdict.String()}
		ev.step(StepTier1, &tr.t1In, &tr.t1Out, true)
		ev.actionToPass()
		return
	}
	tr.t1In, tr.t1Out = VetoInput{Vetoes: d.Vetoes}, VerdictState{Verdict: "continue"}
	ev.step(StepTier1, &tr.t1In, &tr.t1Out, false)

	// 7. ucs_compute
	var sw, sws float64
	minScore := 1.0
	for _, s := range d.Scores {
		w := s.Weight * s.Confidence
		sw += w
		sws += s.Score * w
		minScore = min(minScore, s.Score)
	}
	base := 0.5
	if sw > 0 {
		base = sws / sw
	}
	shift := (ev.effTrust - cfg.TrustBaseline) * cfg.TrustShiftFactor
	drag := 0.0
	if minScore < cfg.FloorDragBelow {
		drag = (cfg.FloorDragBelow - minScore) * cfg.FloorDragFactor
	}
	ucs := min(max(base+shift-drag, 0), 1)
	tr.ucsIn = UCSInput{WeightSum: sw, Trust: ev.effTrust, MinScore: minScore}
	tr.ucsOut = UCSOutput{Base: base, TrustShift: shift, FloorDrag: drag, UCS: ucs}
	ev.step(StepUCSCompute, &tr.ucsIn, &tr.ucsOut, false)

	// 8. ucs_adjustment
	critical := 0
	for _, s := range signals {
		if s.Severity == SignalCritical {
			critical++
		}
	}
	adj := 0.0
	if critical > 0 && ucs > cfg.DenyThreshold && ucs < cfg.AllowThreshold {
		adj = min(float64(critical)*cfg.CriticalPenalty, ucs)
	}
	tr.adjIn = UCSAdjustInput{UCS: ucs, CriticalSignals: critical}
	ucs -= adj
	d.UCS = ucs
	d.CrossDimensional.UCSAdjustment = -adj
	tr.adjOut = UCSAdjustOutput{Adjustment: -adj, UCS: ucs}
	ev.step(StepUCSAdjustment, &tr.adjIn, &tr.adjOut, false)

	// 9. reversibility_escalation
	forced := ev.rev == Irreversible
	d.Reversibility.ForcedTier3 = forced
	tr.escIn, tr.escOut = EscalationInput{Level: ev.rev}, EscalationOutput{ForcedTier3: forced}
	ev.step(StepReversibilityEscalation, &tr.escIn, &tr.escOut, false)

	// 10. tier2 (skipped for irreversible actions)
	if !forced {
		tr.t2In = ThresholdInput{UCS: ucs, AllowThreshold: cfg.AllowThreshold, DenyThreshold: cfg.DenyThreshold}
		tin := &tr.t2In
		switch {
		case ucs >= cfg.AllowThreshold:
			ev.decide(Allow, 2, "Tier 2: UCS "+ftoa(ucs)+" is at or above the allow threshold "+ftoa(cfg.AllowThreshold)+".")
			tr.t2Out = VerdictState{Verdict: "ALLOW"}
			ev.step(StepTier2, tin, &tr.t2Out, true)
			ev.actionToPass()
			return
		case ucs <= cfg.DenyThreshold:
			ev.decide(Deny, 2, "Tier 2: UCS "+ftoa(ucs)+" is at or below the deny threshold "+ftoa(cfg.DenyThreshold)+".")
			tr.t2Out = VerdictState{Verdict: "DENY"}
			ev.step(StepTier2, tin, &tr.t2Out, true)
			ev.actionToPass()
			return
		}
		tr.t2Out = VerdictState{Verdict: "continue"}
		ev.step(StepTier2, tin, &tr.t2Out, false)
	}

	// 11. tier3
	ev.tier3(ucs)
	ev.actionToPass()
}

func (ev *evaluation) tier3(ucs float64) {
	cfg, d, tr := ev.cfg, ev.d, &ev.blk.tr
	tr.t3In = DeliberationInput{UCS: ucs, Trust: ev.effTrust, Reversibility: ev.rev, Deliberators: len(ev.deliberators)}
	decide := func(v Verdict, rule, reasoning string) {
		ev.decide(v, 3, "Tier 3: "+reasoning)
		tr.t3Out = VerdictState{Verdict: v.String(), Rule: rule}
		ev.step(StepTier3, &tr.t3In, &tr.t3Out, true)
	}
	if len(ev.deliberators) > 0 {
		args := DeliberateArgs{AgentID: d.AgentID, Action: ev.act, UCS: ucs, Trust: ev.effTrust, Reversibility: ev.rev, Scores: slices.Clone(d.Scores)}
		for i, dl := range ev.deliberators {
			if v, why, ok := dl.Deliberate(args); ok && v >= Allow && v <= Suspend {
				decide(v, "deliberator "+strconv.Itoa(i), why)
				return
			}
		}
	}
	prefix := "UCS " + ftoa(ucs)
	if ev.rev == Irreversible {
		prefix += " for an irreversible action"
	}
	switch {
	case ev.approvalUsed:
		// A human approved this exact action: the review that tier 3
		// would ask for has happened. (Vetoes and a tier 2 denial still
		// stand; an approval only settles the uncertain band.)
		decide(Allow, "human_approval", prefix+"; a human approved this exact action: allowed once.")
	case ev.effTrust > cfg.Tier3TrustAllow && ucs > cfg.Tier3UCSAllow:
		decide(Allow, "trusted", prefix+"; trust "+ftoa(ev.effTrust)+" above "+ftoa(cfg.Tier3TrustAllow)+" and UCS above "+ftoa(cfg.Tier3UCSAllow)+": allowed.")
	case ev.effTrust < cfg.Tier3TrustEscalate:
		decide(Escalate, "low_trust", prefix+"; trust "+ftoa(ev.effTrust)+" below "+ftoa(cfg.Tier3TrustEscalate)+": held for a human.")
	case ev.rev == Irreversible:
		decide(Escalate, "irreversible", prefix+"; trust "+ftoa(ev.effTrust)+" is not high enough to take an irreversible action alone: held for a human.")
	default:
		for i, s := range d.Scores {
			if s.Weight >= cfg.ModifyWeight && s.Score < cfg.ModifyScore {
				d.Modifications = []string{"reduce_scope", "require_confirmation"}
				decide(Modify, "weak_dimension", prefix+"; "+dimensionOrder[i].name+" (weight "+ftoa(s.Weight)+") scores "+ftoa(s.Score)+": modified.")
				return
			}
		}
		decide(Allow, "default", prefix+": no tier 3 concern, allowed.")
	}
}

func (ev *evaluation) vetoesOrEmpty() []string {
	if ev.vetoes == nil {
		return []string{}
	}
	return ev.vetoes
}

// vetoReasons names each veto with its reason.
func (ev *evaluation) vetoReasons() string {
	out := ""
	for i, v := range ev.vetoes {
		if i > 0 {
			out += "; "
		}
		out += v
		for _, s := range ev.d.Scores {
			if s.Dimension == v {
				out += " (" + s.Reasoning + ")"
			}
		}
	}
	for _, f := range ev.failedInvariants {
		out += "; " + f
	}
	return out
}

func lowest(scores []DimensionScore) DimensionPoint {
	p := DimensionPoint{Score: 2}
	for _, s := range scores {
		if s.Score < p.Score {
			p = DimensionPoint{Dimension: s.Dimension, Score: s.Score}
		}
	}
	return p
}

// commit applies the decision to the agent's state (not in dry runs).
func (ev *evaluation) commit() {
	cfg, st, d, now := ev.cfg, ev.st, ev.d, ev.now
	trustBefore := st.Trust
	if ev.trust != st.Trust {
		st.setTrust(cfg, now, ev.trust, "decay", "idle decay toward the baseline")
	}
	switch d.Verdict {
	case Allow:
		st.adjustTrust(cfg, now, cfg.TrustAllowDelta, "decision", "ALLOW")
	case Deny:
		st.adjustTrust(cfg, now, cfg.TrustDenyDelta, "decision", "DENY")
		st.Violations++
		st.Denied.push(deniedAction{Digest: ev.actionDigest(), ActionID: d.ActionID})
	}

	typ := ev.act.Type
	st.Decisions++
	ts := st.TypeStats[typ]
	if ts == nil {
		if len(st.TypeStats) >= cfg.MaxDistinctKeys {
			typ = otherKey
		}
		if ts = st.TypeStats[typ]; ts == nil {
			ts = &typeStat{}
			st.TypeStats[typ] = ts
		}
	}
	ts.Total++
	if d.Verdict == Deny {
		ts.Denied++
	}
	st.Recent.push(ev.act.Type)
	if d.Verdict == Allow || d.Verdict == Modify {
		if ev.cc.spec.Limits.ActionsPerMinute > 0 {
			st.pruneRate(now)
			st.RateWindow = append(st.RateWindow, now)
		}
		if _, ok := ev.cc.windows[ev.act.Type]; ok {
			st.LastOfType[ev.act.Type] = now
		}
	}
	if ev.approvalUsed {
		delete(st.Approvals, ev.actionDigest())
	}
	for dg, exp := range st.Approvals {
		if !now.Before(exp) {
			delete(st.Approvals, dg)
		}
	}

	if ev.ov != nil {
		for term, id := range ev.ov.ReAnchors {
			if st.AppliedReAnchors[term] != id {
				st.reAnchor(cfg, term)
				st.AppliedReAnchors[term] = id
			}
		}
	}
	st.observe(cfg, observation{Type: ev.act.Type, Target: targetKey(ev.cc.prior, ev.act.Target), Hour: now.Hour(),
		Outcome: d.Verdict.String(), Time: now, Terms: ev.terms})
	if st.driftDue(cfg) {
		st.recomputeDrift(cfg, ev.cc.prior, ev.thresholds, now)
	}
	st.TrustSeries.push(st.Trust)
	st.Prev = &prevDecision{ActionID: d.ActionID, Verdict: d.Verdict, TrustBefore: trustBefore, TrustAfter: st.Trust}
	st.LastEvaluation = now
}

// fillState records the agent's behavioural and semantic state as the
// decision leaves it.
func (ev *evaluation) fillState() {
	st, d := ev.st, ev.d
	d.State = BehavioralState{
		FingerprintConfidence: st.fingerprintConfidence(ev.cfg),
		Observations:          st.Observations,
		Drift:                 st.Drift,
		DriftConfidence:       st.DriftConfidence,
		Severity:              severity(st.Drift.Overall, ev.thresholds),
		Trust:                 st.Trust,
		TrustDirection:        st.trustDirection(ev.cfg),
		TrustVelocity:         st.trustVelocity(),
	}
	if d.CausalLinks == nil {
		d.CausalLinks = []CausalLink{}
	}
	instr := ev.req.Context.Instruction
	if utf8.RuneCountInString(instr) > ev.cfg.InstructionMaxRune {
		instr = string([]rune(instr)[:ev.cfg.InstructionMaxRune])
	}
	d.Semantic = SemanticContext{InstructionContext: instr, MatchedAnchorTerms: ev.terms, AggregateDrift: st.Drift.Semantic}
	if d.Semantic.MatchedAnchorTerms == nil {
		d.Semantic.MatchedAnchorTerms = []string{}
	}
	d.Semantic.PerTermDrift = make(map[string]float64, len(ev.terms))
	for _, t := range ev.terms {
		if ts := st.Terms[t]; ts != nil {
			d.Semantic.PerTermDrift[t] = ts.Drift
		}
	}
	if d.Scores == nil {
		d.Scores = []DimensionScore{}
	}
	if d.Contextual.WeightAdjustments == nil {
		d.Contextual.WeightAdjustments = []WeightAdjustment{}
	}
	if d.Contextual.TrustModifiers == nil {
		d.Contextual.TrustModifiers = []TrustModifier{}
	}
	if d.CrossDimensional.Signals == nil {
		d.CrossDimensional.Signals = []Signal{}
	}
}

// decisionBlock holds a decision with its pipeline, scores and every step's
// states in one allocation: a trace costs one allocation, not thirty. The
// steps point into the block, which lives as long as the decision.
type decisionBlock struct {
	d      Decision
	steps  [11]Step // the longest pipeline has 11 steps
	scores [numDims]DimensionScore
	tr     traceStates
}

type traceStates struct {
	pre           PrecheckState
	preOut, t1Out VerdictState
	t2Out, t3Out  VerdictState
	decayIn       TrustDecayInput
	decayOut      TrustState
	ctxIn         ContextInput
	ctxOut        ContextOutput
	revIn         ReversibilityInput
	revOut        ReversibilityOutput
	dimIn         DimensionInput
	dimOut        DimensionOutput
	crossIn       CrossInput
	crossOut      CrossOutput
	t1In          VetoInput
	ucsIn         UCSInput
	ucsOut        UCSOutput
	adjIn         UCSAdjustInput
	adjOut        UCSAdjustOutput
	escIn         EscalationInput
	escOut        EscalationOutput
	t2In          ThresholdInput
	t3In          DeliberationInput
}
