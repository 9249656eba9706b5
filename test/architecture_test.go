package test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/vigilhq/vigil"

// allowed lists, per package of ours, the packages of ours it may import
// (ARCHITECTURE.md, "Packages and what each may import"). A package missing
// here fails the test: add it deliberately, with its rule.
var allowed = map[string][]string{
	"governor":            {},
	"governor/trajectory": {"governor"},
	"controlplane":        {"governor"},
	"ledger":              {"governor"},
	"ledger/ledgertest":   {"ledger"}, // the Store conformance suite (test support)
	"test/redistest":      {},         // starts a private redis-server for tests
	"proxy/toolcall":      {"governor"},
	"proxy":               {"governor", "ledger", "controlplane", "proxy/toolcall"},
	"admin":               {"governor", "governor/trajectory", "controlplane", "ledger", "admin/wire"},
	"admin/wire":          {"governor", "governor/trajectory", "controlplane", "ledger"},
	"cmd/vigil":           {"*"},
	"test":                {"*"},
	"test/load":           {"*"},

	"controlplane/controlplanetest": {"controlplane"}, // the Store conformance suite (test support)
}

// frameworks may be imported only by the packages listed (an import path
// matches a framework by prefix; a package "x/..." names x and everything
// below it). ARCHITECTURE.md: framework types stay inside their package.
var frameworks = map[string][]string{
	"github.com/gin-gonic/gin":           {"admin"},
	"github.com/elazarl/goproxy":         {"proxy", "test/load"}, // test/load: plain goproxy is the baseline
	"github.com/redis/go-redis":          {"controlplane", "ledger", "cmd/vigil", "test/..."},
	"go.opentelemetry.io/otel/sdk":       {"cmd/vigil", "test"},
	"go.opentelemetry.io/otel/exporters": {"cmd/vigil"},
}

// packages returns our packages (directory relative to the module root) and
// the imports of their non-test files.
func packages(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join("..")
	pkgs := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "deployments" || name == "examples" || name == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if _, ok := pkgs[rel]; !ok {
			pkgs[rel] = nil
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			pkgs[rel] = append(pkgs[rel], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// violations applies the import and framework rules to pkgs.
func violations(pkgs map[string][]string) []string {
	var out []string
	for pkg, imports := range pkgs {
		rules, known := allowed[pkg]
		if !known {
			out = append(out, "package "+pkg+" has no import rule: add it to allowed (and to ARCHITECTURE.md)")
			continue
		}
		for _, imp := range imports {
			if ours, ok := strings.CutPrefix(imp, module+"/"); ok {
				if ours == "cmd/vigil" {
					out = append(out, pkg+" imports cmd/vigil: the composition root is imported by nobody")
				} else if !slices.Contains(rules, "*") && !slices.Contains(rules, ours) {
					out = append(out, pkg+" imports "+ours+": not allowed (may import "+strings.Join(rules, ", ")+")")
				}
				continue
			}
			for fw, users := range frameworks {
				if imp == fw || strings.HasPrefix(imp, fw+"/") {
					if !slices.ContainsFunc(users, func(u string) bool {
						return pkg == u || pkg+"/..." == u || strings.HasPrefix(pkg, strings.TrimSuffix(u, "...")) && strings.HasSuffix(u, "/...")
					}) {
						out = append(out, pkg+" imports "+imp+": framework allowed only in "+strings.Join(users, ", "))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestImportRules(t *testing.T) {
	pkgs := packages(t)
	if _, ok := pkgs["governor"]; !ok {
		t.Fatalf("the walker found no governor package (found %d packages)", len(pkgs))
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

func TestEveryPackageHasDocGo(t *testing.T) {
	for pkg := range packages(t) {
		if _, err := os.Stat(filepath.Join("..", pkg, "doc.go")); err != nil {
			t.Errorf("package %s has no doc.go", pkg)
		}
	}
}

// TestViolationsAreCaught runs the checker on synthetic import lists, so a
// broken checker cannot pass silently.
func TestViolationsAreCaught(t *testing.T) {
	cases := []struct {
		name string
		pkgs map[string][]string
		want int
	}{
		{"clean", map[string][]string{"governor": {"fmt"}, "admin": {module + "/governor", "github.com/gin-gonic/gin"}}, 0},
		{"governor imports ours", map[string][]string{"governor": {module + "/ledger"}}, 1},
		{"gin outside admin", map[string][]string{"proxy": {"github.com/gin-gonic/gin"}}, 1},
		{"redis in governor", map[string][]string{"governor": {"github.com/redis/go-redis/v9"}}, 1},
		{"otel sdk in proxy", map[string][]string{"proxy": {"go.opentelemetry.io/otel/sdk/trace"}}, 1},
		{"importing the composition root", map[string][]string{"test": {module + "/cmd/vigil"}}, 1},
		{"unknown package", map[string][]string{"util": {}}, 1},
		{"admin/wire uses gin", map[string][]string{"admin/wire": {"github.com/gin-gonic/gin"}}, 1},
		{"redis in the load harness", map[string][]string{"test/load": {"github.com/redis/go-redis/v9"}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := violations(tc.pkgs); len(got) != tc.want {
				t.Errorf("got %d violations %v, want %d", len(got), got, tc.want)
			}
		})
	}
}
