package admin

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor/trajectory"
)

// TestOpenAPITrajectorySchemasMatchWire checks that each trajectory schema
// has exactly the JSON fields of its wire struct, and names the required
// ones: every field but "note" (present only with the optimizer off).
func TestOpenAPITrajectorySchemasMatchWire(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	types := map[string]any{
		"Trajectory": wire.Trajectory{}, "DriftScores": wire.DriftScores{}, "DriftPoint": wire.DriftPoint{},
		"TrajectoryMarker": wire.TrajectoryMarker{}, "Recommendation": wire.Recommendation{}, "Policy": wire.Policy{},
		"PolicyStep": wire.PolicyStep{}, "PolicyCondition": wire.PolicyCondition{}, "PolicyCost": wire.PolicyCost{},
		"PolicyComparison": wire.PolicyComparison{}, "TrajectoryHistory": wire.TrajectoryHistory{},
		"DriftRecord": wire.DriftRecord{}, "Intervention": wire.Intervention{}, "Fleet": wire.Fleet{},
		"FleetAgent": wire.FleetAgent{}, "FleetSummary": wire.FleetSummary{}, "FleetPolicyStates": wire.FleetPolicyStates{},
		"SimulateRequest": wire.SimulateRequest{}, "Simulation": wire.Simulation{}, "CurvePoint": wire.CurvePoint{},
	}
	for name, v := range types {
		t.Run(name, func(t *testing.T) {
			schema, ok := doc.Components.Schemas[name]
			if !ok {
				t.Fatalf("got no schema, want one for wire.%T", v)
			}
			var fields, required []string
			rt := reflect.TypeOf(v)
			for i := range rt.NumField() {
				tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
				fields = append(fields, tag)
				if tag != "note" {
					required = append(required, tag)
				}
			}
			var props []string
			for p := range schema.Properties {
				props = append(props, p)
			}
			slices.Sort(fields)
			slices.Sort(props)
			slices.Sort(required)
			if !slices.Equal(props, fields) {
				t.Errorf("got properties %v, want %v", props, fields)
			}
			got := slices.Sorted(slices.Values(schema.Required))
			if !slices.Equal(got, required) {
				t.Errorf("got required %v, want %v", got, required)
			}
		})
	}
}

// TestOpenAPITrajectoryOperations checks the answers each trajectory route
// documents, and that every example decodes strictly into its wire type.
func TestOpenAPITrajectoryOperations(t *testing.T) {
	type media struct {
		Example  json.RawMessage `json:"example"`
		Examples map[string]struct {
			Value json.RawMessage `json:"value"`
		} `json:"examples"`
	}
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]media `json:"content"`
			} `json:"requestBody"`
			Responses map[string]struct {
				Content map[string]media `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	cases := []struct {
		method, path string
		codes        []string
		answer       func() any
	}{
		{"get", "/v1/trajectory/{agent_id}", []string{"404", "503"}, func() any { return &wire.Trajectory{} }},
		{"get", "/v1/trajectory/{agent_id}/history", []string{"404", "503"}, func() any { return &wire.TrajectoryHistory{} }},
		{"get", "/v1/trajectory/fleet", nil, func() any { return &wire.Fleet{} }},
		{"post", "/v1/trajectory/simulate", []string{"400", "404", "413"}, func() any { return &wire.Simulation{} }},
	}
	strict := func(raw json.RawMessage, v any) error {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		return dec.Decode(v)
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			op, ok := doc.Paths[tc.path][tc.method]
			if !ok {
				t.Fatalf("got no operation, want one")
			}
			for _, code := range tc.codes {
				if _, ok := op.Responses[code]; !ok {
					t.Errorf("got no %s answer documented, want one", code)
				}
			}
			examples := op.Responses["200"].Content["application/json"].Examples
			if len(examples) == 0 {
				t.Errorf("200: got no examples, want some")
			}
			for name, ex := range examples {
				if err := strict(ex.Value, tc.answer()); err != nil {
					t.Errorf("example %s: %v", name, err)
				}
			}
			if tc.method == "post" {
				if err := strict(op.RequestBody.Content["application/json"].Example, &wire.SimulateRequest{}); err != nil {
					t.Errorf("request example: %v", err)
				}
			}
		})
	}
}

// TestOpenAPIFleetPolicyStates checks the documented policy states against
// trajectory's, and that every fleet example labels its agents as the
// server does: a state only with the optimizer, no strategy or cost for a
// pending policy, and counts that add up.
func TestOpenAPIFleetPolicyStates(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Examples map[string]struct {
						Value wire.Fleet `json:"value"`
					} `json:"examples"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Enum []string `json:"enum"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	want := []string{string(trajectory.PolicyCurrent), string(trajectory.PolicyStale), string(trajectory.PolicyPending)}
	if got := doc.Components.Schemas["PolicyState"].Enum; !slices.Equal(got, want) {
		t.Errorf("PolicyState enum: got %v, want %v", got, want)
	}
	examples := doc.Paths["/v1/trajectory/fleet"]["get"].Responses["200"].Content["application/json"].Examples
	for name, ex := range examples {
		t.Run(name, func(t *testing.T) {
			f := ex.Value
			if (f.PolicyStates != nil) != f.OptimizerEnabled {
				t.Errorf("policy_states %+v with optimizer_enabled %v: want them only with the optimizer", f.PolicyStates, f.OptimizerEnabled)
			}
			var counts wire.FleetPolicyStates
			for _, a := range f.Agents {
				if (a.PolicyState != nil) != f.OptimizerEnabled {
					t.Errorf("%s: policy_state %v with optimizer_enabled %v", a.AgentID, a.PolicyState, f.OptimizerEnabled)
					continue
				}
				pending := a.PolicyState == nil || *a.PolicyState == string(trajectory.PolicyPending)
				if (a.Strategy == nil) != pending || (a.ExpectedCost == nil) != pending {
					t.Errorf("%s: strategy %v cost %v in state %v: want both null exactly when pending or off", a.AgentID, a.Strategy, a.ExpectedCost, a.PolicyState)
				}
				if a.PolicyState == nil {
					continue
				}
				switch trajectory.PolicyState(*a.PolicyState) {
				case trajectory.PolicyCurrent:
					counts.Current++
				case trajectory.PolicyStale:
					counts.Stale++
				case trajectory.PolicyPending:
					counts.Pending++
				default:
					t.Errorf("%s: unknown policy_state %q", a.AgentID, *a.PolicyState)
				}
			}
			if f.PolicyStates != nil && *f.PolicyStates != counts {
				t.Errorf("policy_states: got %+v, want the agents' %+v", *f.PolicyStates, counts)
			}
			if f.Summary.Total != len(f.Agents) {
				t.Errorf("summary.total: got %d, want %d agents", f.Summary.Total, len(f.Agents))
			}
		})
	}
	if len(examples) < 3 {
		t.Errorf("examples: got %d, want every policy state and the optimizer off shown", len(examples))
	}
}
