package toolcall

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestParseGolden parses each testdata/parse/<name>.request with testRoutes
// and compares the call with <name>.golden. A request file holds the request
// line "METHOD URL", header lines, a blank line and the body (its final
// newline is not part of it). Run `go test ./proxy/toolcall -run
// TestParseGolden -update` to accept a change.
func TestParseGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "parse", "*.request"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("got %d golden requests, want at least 8", len(files))
	}
	rules := testRules(t)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".request")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			req, err := readRequest(src)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			got, err := json.MarshalIndent(viewOf(Parse(req, rules)), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(file, ".request") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got:\n%s\nwant (%s):\n%s", got, golden, want)
			}
		})
	}
}

// readRequest reads the request file format of TestParseGolden.
func readRequest(src []byte) (Request, error) {
	head, body, _ := bytes.Cut(src, []byte("\n\n"))
	lines := strings.Split(string(head), "\n")
	method, rawURL, _ := strings.Cut(lines[0], " ")
	u, err := url.Parse(rawURL)
	if err != nil {
		return Request{}, err
	}
	h := http.Header{}
	for _, l := range lines[1:] {
		k, v, _ := strings.Cut(l, ":")
		h.Add(k, strings.TrimSpace(v))
	}
	body = bytes.TrimSuffix(body, []byte("\n"))
	r := Request{Method: method, Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawQuery: u.RawQuery,
		ContentType: h.Get("Content-Type"), SessionID: h.Get("Mcp-Session-Id"), Body: body}
	if len(r.Body) > InspectLimit {
		r.Body, r.Truncated = r.Body[:InspectLimit], true
	}
	return r, nil
}
