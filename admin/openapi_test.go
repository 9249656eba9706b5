package admin

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/admin/wire"
	"github.com/vigilhq/vigil/governor"
)

// newTestServer builds a server over a real engine with one admin key.
func newTestServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.Governor == nil {
		eng, err := governor.New(governor.DefaultConfig())
		if err != nil {
			t.Fatalf("governor.New: %v", err)
		}
		opts.Governor = eng
	}
	if opts.Keys == nil {
		opts.Keys = []Key{{Key: "k-admin", Principal: "root", Role: RoleAdmin}}
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

type openAPIDoc struct {
	OpenAPI    string                          `json:"openapi"`
	Security   []map[string][]string           `json:"security"`
	Paths      map[string]map[string]openAPIOp `json:"paths"`
	Components struct {
		SecuritySchemes map[string]map[string]string `json:"securitySchemes"`
		Schemas         map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"schemas"`
	} `json:"components"`
}

type openAPIOp struct {
	Role        string                `json:"x-vigil-role"`
	Security    []map[string][]string `json:"security"`
	RequestBody any                   `json:"requestBody"`
	Responses   map[string]any        `json:"responses"`
}

var httpMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi: got %q, want 3.1.0", doc.OpenAPI)
	}
	return doc
}

// openAPIPath turns a Gin path (/v1/agents/:agent_id) into an OpenAPI path
// (/v1/agents/{agent_id}).
func openAPIPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			segs[i] = "{" + name + "}"
		}
	}
	return strings.Join(segs, "/")
}

func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	s := newTestServer(t, Options{})

	registered := map[string]bool{}
	for _, r := range s.engine.Routes() {
		registered[r.Method+" "+openAPIPath(r.Path)] = true
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths {
		for method := range item {
			if !slices.Contains(httpMethods, method) {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	for r := range registered {
		if !documented[r] {
			t.Errorf("route %s: registered, want it documented in openapi.json", r)
		}
	}
	for r := range documented {
		if !registered[r] {
			t.Errorf("route %s: documented, want it registered", r)
		}
	}
	if len(registered) == 0 {
		t.Fatalf("routes: got none registered, want some")
	}

	for _, r := range s.routes() {
		name := r.method + " " + r.path
		op := doc.Paths[openAPIPath(r.path)][strings.ToLower(r.method)]
		wantRole := string(r.role)
		if r.role == "" {
			wantRole = "public"
			if op.Security == nil || len(op.Security) != 0 {
				t.Errorf("%s: got security %v, want [] for a public route", name, op.Security)
			}
		} else if op.Security != nil {
			t.Errorf("%s: got security %v, want the global X-Api-Key requirement", name, op.Security)
		}
		if op.Role != wantRole {
			t.Errorf("%s: got x-vigil-role %q, want %q", name, op.Role, wantRole)
		}
		success := "200"
		if r.method == http.MethodPost && r.path == "/v1/control/directives" {
			success = "201"
		}
		want := []string{success, "500"}
		if r.role != "" {
			want = append(want, "401", "403")
		}
		if op.RequestBody != nil {
			want = append(want, "400", "413")
		}
		for _, code := range want {
			if _, ok := op.Responses[code]; !ok {
				t.Errorf("%s: got no %s response documented, want one", name, code)
			}
		}
	}

	scheme := doc.Components.SecuritySchemes["ApiKey"]
	if scheme["type"] != "apiKey" || scheme["in"] != "header" || scheme["name"] != "X-Api-Key" {
		t.Errorf("security scheme ApiKey: got %v, want an apiKey in header X-Api-Key", scheme)
	}
	if len(doc.Security) != 1 || doc.Security[0]["ApiKey"] == nil {
		t.Errorf("global security: got %v, want [{ApiKey: []}]", doc.Security)
	}
}

func TestOpenAPIRefsResolve(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if !resolves(doc, ref) {
					t.Errorf("$ref %s: got nothing at it, want a definition", ref)
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
}

func resolves(doc map[string]any, ref string) bool {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	var cur any = doc
	for _, seg := range strings.Split(p, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[seg]; !ok {
			return false
		}
	}
	return true
}

// TestOpenAPISchemasMatchWire checks that each documented schema has exactly
// the JSON fields of its wire struct.
func TestOpenAPISchemasMatchWire(t *testing.T) {
	doc := loadOpenAPI(t)
	types := map[string]any{
		"ErrorResponse": wire.ErrorResponse{}, "ErrorBody": wire.ErrorBody{}, "Health": wire.Health{}, "Info": wire.Info{},
		"EvaluateRequest": wire.EvaluateRequest{}, "ActionRequest": wire.ActionRequest{}, "ContextRequest": wire.ContextRequest{},
		"Evaluation": wire.Evaluation{}, "LedgerRef": wire.LedgerRef{}, "DimensionScore": wire.DimensionScore{},
		"ActionToPass": wire.ActionToPass{}, "DimensionGap": wire.DimensionGap{}, "DimensionPoint": wire.DimensionPoint{},
		"Reversibility": wire.Reversibility{}, "AgentList": wire.AgentList{}, "AgentSummary": wire.AgentSummary{},
		"Agent": wire.Agent{}, "Contract": wire.Contract{}, "TimeWindow": wire.TimeWindow{}, "Limits": wire.Limits{},
		"Trust": wire.Trust{}, "Drift": wire.Drift{}, "Fingerprint": wire.Fingerprint{}, "Share": wire.Share{},
		"Thresholds": wire.Thresholds{}, "Alert": wire.Alert{}, "ArchetypeList": wire.ArchetypeList{},
		"Archetype": wire.Archetype{}, "Prior": wire.Prior{}, "DriftWeights": wire.DriftWeights{},
		"LedgerEntries": wire.LedgerEntries{}, "LedgerTrace": wire.LedgerTrace{}, "LedgerReport": wire.LedgerReport{},
		"DirectiveRequest": wire.DirectiveRequest{}, "DirectiveTarget": wire.DirectiveTarget{},
		"DirectiveParameters": wire.DirectiveParameters{}, "DirectiveInvariant": wire.DirectiveInvariant{},
		"Directive": wire.Directive{}, "DirectiveResult": wire.DirectiveResult{}, "DirectiveList": wire.DirectiveList{},
		"ProvenanceEvent": wire.ProvenanceEvent{}, "ProvenanceList": wire.ProvenanceList{},
		"Approval": wire.Approval{}, "ApprovalAction": wire.ApprovalAction{}, "ApprovalList": wire.ApprovalList{},
		"ApprovalDecision": wire.ApprovalDecision{},
	}
	for name, v := range types {
		schema, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("schema %s: got none, want one for wire.%T", name, v)
			continue
		}
		var want, got []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			want = append(want, tag)
		}
		for p := range schema.Properties {
			got = append(got, p)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("schema %s: got properties %v, want %v", name, got, want)
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	s := newTestServer(t, Options{})
	req, _ := http.NewRequest(http.MethodGet, "/v1/openapi.json", nil)
	req.Header.Set(apiKeyHeader, "k-admin")
	rec := newRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status: got %d, want 200", rec.Code)
	}
	if got := rec.Body.String(); got != string(openAPIDocument) {
		t.Errorf("body: got %d bytes, want the embedded document (%d bytes)", len(got), len(openAPIDocument))
	}
}

// TestOpenAPIParameters checks that every path template parameter is
// declared (directly or through components/parameters) and that nothing
// else is declared in the path, that the ledger routes document their 400
// (where they take a sequence or a query), 404 and 503 answers, and that the
// control, provenance and approval routes document theirs.
func TestOpenAPIParameters(t *testing.T) {
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]openAPIParam `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	for path, item := range doc.Paths {
		for method, raw := range item {
			if !slices.Contains(httpMethods, method) {
				continue
			}
			var op struct {
				Parameters []openAPIParam `json:"parameters"`
				Responses  map[string]any `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			name := strings.ToUpper(method) + " " + path
			var inPath []string
			query := false
			for _, p := range op.Parameters {
				if ref, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
					def, found := doc.Components.Parameters[ref]
					if !found {
						t.Errorf("%s: parameter $ref %s: got nothing, want a definition", name, p.Ref)
						continue
					}
					p = def
				}
				switch p.In {
				case "path":
					if !p.Required {
						t.Errorf("%s: path parameter %s: got required false, want true", name, p.Name)
					}
					inPath = append(inPath, p.Name)
				case "query":
					query = true
				}
			}
			var want []string
			for _, seg := range strings.Split(path, "/") {
				if p, ok := strings.CutPrefix(seg, "{"); ok {
					want = append(want, strings.TrimSuffix(p, "}"))
				}
			}
			slices.Sort(inPath)
			slices.Sort(want)
			if !slices.Equal(inPath, want) {
				t.Errorf("%s: got path parameters %v, want %v", name, inPath, want)
			}
			var codes []string
			switch {
			case strings.HasPrefix(path, "/v1/ledger/"):
				codes = []string{"404", "503"}
				if query || slices.Contains(want, "sequence") {
					codes = append(codes, "400")
				}
			case strings.HasPrefix(path, "/v1/control/"):
				// Writes may meet a disabled control plane or an
				// expired directive, and a store failure; an id may
				// name no directive.
				if method != "get" {
					codes = append(codes, "409", "503")
				}
				if slices.Contains(want, "directive_id") {
					codes = append(codes, "404")
				}
			case path == "/v1/provenance":
				codes = []string{"400", "503"}
			case strings.HasPrefix(path, "/v1/approvals"):
				// The list validates its filters; a decision may name
				// no approval or a decided one; both meet the store.
				codes = []string{"400", "503"}
				if method != "get" {
					codes = append(codes, "404", "409")
				}
			}
			for _, code := range codes {
				if _, ok := op.Responses[code]; !ok {
					t.Errorf("%s: got no %s response documented, want one", name, code)
				}
			}
		}
	}
}

type openAPIParam struct {
	Ref      string `json:"$ref"`
	Name     string `json:"name"`
	In       string `json:"in"`
	Required bool   `json:"required"`
}
