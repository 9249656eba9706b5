package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

const (
	// maxConfigBytes bounds the configuration file.
	maxConfigBytes = 4 << 20
	// maxReported bounds the problems reported one by one.
	maxReported = 50
	// maxIndexDepth bounds the nesting that gets key paths (the file's own
	// keys go 6 deep); deeper nodes are reported by line only.
	maxIndexDepth = 32
)

// loadConfig reads and checks the configuration file at path. An empty path
// gives the built-in defaults (defaultConfig).
func loadConfig(path string) (*fileConfig, error) {
	if path == "" {
		return defaultConfig(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parseConfig(data)
}

// parseConfig decodes one YAML document into a fileConfig, refusing unknown
// keys and values of the wrong type, fills in the defaults and validates the
// result. Every problem found is reported (errors.Join of *configError), each
// naming its line and key path where they are known. An empty document gives
// the defaults.
func parseConfig(data []byte) (*fileConfig, error) {
	if len(data) > maxConfigBytes {
		return nil, &configError{Msg: fmt.Sprintf("file is larger than %d bytes", maxConfigBytes)}
	}
	// A first pass into a node tree: syntax errors, the version, and the
	// positions used to put line numbers on the errors found later.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, syntaxError(err)
	}
	idx := indexNodes(&root)
	// A file of another version would mostly produce unknown keys: say
	// what is wrong first.
	if err := versionError(&root); err != nil {
		return nil, err
	}

	c := &fileConfig{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, idx.decodeError(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &configError{Line: extra.Line, Msg: "a second YAML document: the configuration is one document"}
	case !errors.Is(err, io.EOF):
		return nil, idx.decodeError(err)
	}

	c.applyDefaults()
	if err := c.validate(); err != nil {
		return nil, idx.locate(err)
	}
	return c, nil
}

// versionError checks the top-level `version` before the strict decoding.
func versionError(root *yaml.Node) error {
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != "version" {
			continue
		}
		var v int
		if err := m.Content[i+1].Decode(&v); err != nil {
			return nil // the strict decoding reports the type
		}
		if v != configVersion {
			return &configError{Line: m.Content[i].Line, Path: "version", Msg: unsupportedVersion(v)}
		}
	}
	return nil
}

var (
	reLine      = regexp.MustCompile(`(?s)^line (\d+): (.*)$`)
	reUnknown   = regexp.MustCompile(`(?s)^line (\d+): field (.*) not found in type (\S+)$`)
	reDuplicate = regexp.MustCompile(`(?s)^line (\d+): mapping key (.*) already defined at line (\d+)$`)
	reType      = regexp.MustCompile("(?s)^line (\\d+): cannot unmarshal (\\S+)(?: `(.*)`)? into (.+)$")
)

// syntaxError rewrites a yaml error ("yaml: line 3: ...") as a *configError.
func syntaxError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := reLine.FindStringSubmatch(msg); m != nil {
		return &configError{Line: atoi(m[1]), Msg: m[2]}
	}
	return &configError{Msg: msg}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// nodeIndex records where each key path of the file is.
type nodeIndex struct {
	nodes  []indexedNode  // document order
	byLine map[int][]int  // line → indexes into nodes
	next   map[int]int    // line → position in byLine after the last match
	lines  map[string]int // key path → line of its key (or list item)
}

type indexedNode struct {
	node  *yaml.Node
	path  string // the key path of the value, or for a key the path it names
	isKey bool
	in    string // for a key: the path of its mapping
}

func indexNodes(root *yaml.Node) *nodeIndex {
	x := &nodeIndex{byLine: map[int][]int{}, next: map[int]int{}, lines: map[string]int{}}
	x.walk(root, "", 0)
	for i, n := range x.nodes {
		x.byLine[n.node.Line] = append(x.byLine[n.node.Line], i)
	}
	return x
}

// find returns the first node at line, in document order from just after
// the previous match on that line (yaml reports its errors in document
// order, and a flow mapping puts many candidates on one line), that ok
// accepts.
func (x *nodeIndex) find(line int, ok func(indexedNode) bool) (indexedNode, bool) {
	at := x.byLine[line]
	start := x.next[line]
	for _, from := range []int{start, 0} {
		for j := from; j < len(at); j++ {
			if n := x.nodes[at[j]]; ok(n) {
				x.next[line] = j + 1
				return n, true
			}
		}
	}
	return indexedNode{}, false
}

func (x *nodeIndex) walk(n *yaml.Node, p string, depth int) {
	if depth > maxIndexDepth {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			x.walk(c, p, depth)
		}
		return
	case yaml.MappingNode:
		x.nodes = append(x.nodes, indexedNode{node: n, path: p})
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp := keyPath(p, k.Value)
			x.nodes = append(x.nodes, indexedNode{node: k, path: kp, isKey: true, in: p})
			x.mark(kp, k.Line)
			x.walk(v, kp, depth+1)
		}
	case yaml.SequenceNode:
		x.nodes = append(x.nodes, indexedNode{node: n, path: p})
		for i, c := range n.Content {
			ip := fmt.Sprintf("%s[%d]", p, i)
			x.mark(ip, c.Line)
			x.walk(c, ip, depth+1)
		}
	default: // scalars; aliases are not followed
		x.nodes = append(x.nodes, indexedNode{node: n, path: p})
	}
}

func (x *nodeIndex) mark(p string, line int) {
	if _, ok := x.lines[p]; !ok {
		x.lines[p] = line
	}
}

// line returns the line of the key path p or else of its closest ancestor
// in the file; 0 when none is there.
func (x *nodeIndex) line(p string) int {
	for p != "" {
		if l, ok := x.lines[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// locate puts line numbers on the *configErrors of err (one or joined) and
// sorts them by line.
func (x *nodeIndex) locate(err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = slices.Clone(j.Unwrap())
	}
	for _, e := range errs {
		if ce, ok := e.(*configError); ok && ce.Line == 0 {
			ce.Line = x.line(ce.Path)
		}
	}
	if len(errs) == 1 {
		return err
	}
	slices.SortStableFunc(errs, func(a, b error) int { return cmp.Compare(errorLine(a), errorLine(b)) })
	if len(errs) > maxReported {
		errs = append(errs[:maxReported], &configError{Msg: fmt.Sprintf("%d more problems not shown", len(errs)-maxReported)})
	}
	return errors.Join(errs...)
}

func errorLine(err error) int {
	if ce, ok := err.(*configError); ok {
		return ce.Line
	}
	return 0
}

// decodeError rewrites an error of the strict decoding: every message of a
// *yaml.TypeError becomes one *configError naming the key path.
func (x *nodeIndex) decodeError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return syntaxError(err)
	}
	errs := make([]error, 0, min(len(te.Errors), maxReported+1))
	for i, msg := range te.Errors {
		if i == maxReported {
			errs = append(errs, &configError{Msg: fmt.Sprintf("%d more problems not shown", len(te.Errors)-i)})
			break
		}
		errs = append(errs, x.typeError(msg))
	}
	return errors.Join(errs...)
}

func (x *nodeIndex) typeError(msg string) error {
	if m := reUnknown.FindStringSubmatch(msg); m != nil {
		line, key := atoi(m[1]), m[2]
		return &configError{
			Line: line,
			Path: x.keyIn(line, key),
			Msg:  fmt.Sprintf("unknown key %q%s", key, suggestKey(key, knownKeys(m[3]))),
		}
	}
	if m := reDuplicate.FindStringSubmatch(msg); m != nil {
		line, key := atoi(m[1]), m[2]
		if k, err := strconv.Unquote(key); err == nil {
			key = k
		}
		return &configError{Line: line, Path: x.keyIn(line, key), Msg: fmt.Sprintf("duplicate key %q (first at line %s)", key, m[3])}
	}
	if m := reType.FindStringSubmatch(msg); m != nil {
		line, tag, value, into := atoi(m[1]), m[2], m[3], m[4]
		shown := ""
		if value != "" || strings.Contains(msg, "``") {
			shown = " " + strconv.Quote(value)
		}
		return &configError{
			Line: line,
			Path: x.valueAt(line, tag, value),
			Msg:  fmt.Sprintf("cannot unmarshal %s%s into %s", tag, shown, humanType(into)),
		}
	}
	if m := reLine.FindStringSubmatch(msg); m != nil {
		return &configError{Line: atoi(m[1]), Msg: m[2]}
	}
	return &configError{Msg: msg}
}

// keyIn returns the path of the mapping holding key at line.
func (x *nodeIndex) keyIn(line int, key string) string {
	n, _ := x.find(line, func(n indexedNode) bool { return n.isKey && n.node.Value == key })
	return n.in
}

// valueAt returns the path of the value at line that a yaml type error
// describes (tag and value as yaml shows them, value maybe shortened).
func (x *nodeIndex) valueAt(line int, tag, value string) string {
	kind := yaml.ScalarNode
	switch tag {
	case "!!map":
		kind = yaml.MappingNode
	case "!!seq":
		kind = yaml.SequenceNode
	}
	short, shortened := strings.CutSuffix(value, "...")
	n, ok := x.find(line, func(n indexedNode) bool {
		if n.isKey || n.node.Kind != kind {
			return false
		}
		v := n.node.Value
		return kind != yaml.ScalarNode || v == value || shortened && len(v) > 10 && strings.HasPrefix(v, short)
	})
	if !ok {
		n, _ = x.find(line, func(n indexedNode) bool { return !n.isKey })
	}
	return n.path
}

// keyPath appends key to the key path p: `p.key`, or `p["odd key"]` when
// the key is not a plain word.
func keyPath(p, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return p + "[" + strconv.Quote(key) + "]"
	case p == "":
		return key
	default:
		return p + "." + key
	}
}

// humanType names a Go type of a yaml error in the file's terms.
func humanType(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["), strings.HasPrefix(t, "main."):
		return "a mapping"
	case t == "float64":
		return "float"
	}
	return t
}

// knownKeys lists the yaml keys of the DTO struct type named typeName
// ("main.agentConfig"), found from fileConfig.
func knownKeys(typeName string) []string {
	seen := map[reflect.Type]bool{}
	var keys []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for f := range t.Fields() {
			if t.String() == typeName {
				if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
					keys = append(keys, name)
				}
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[fileConfig]())
	return keys
}

// suggestKey returns ` (did you mean "x"?)` for a close known key, else the
// list of known keys.
func suggestKey(key string, known []string) string {
	if len(known) == 0 {
		return ""
	}
	best, bestD := "", -1
	for _, k := range known {
		d := levenshtein(strings.ToLower(key), k)
		if len(key) >= 3 && (strings.HasPrefix(k, key) || strings.HasPrefix(key, k)) {
			d = min(d, 1) // "hold_timeout" for "hold_timeout_seconds"
		}
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD <= 2 || bestD <= len(key)/3 {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Sprintf(" (known keys: %s)", strings.Join(known, ", "))
}

// levenshtein is the edit distance of a and b, in runes.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
