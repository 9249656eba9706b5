package ledger

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reading recorded states and formatting numbers and words for the
// narrative.

// narrDecode reads a raw state; ok is false when it is missing or not a JSON
// object.
func narrDecode(raw json.RawMessage) (narrState, bool) {
	if len(raw) == 0 {
		return narrState{}, false
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return narrState{}, false
	}
	return narrState(m), true
}

func (m narrState) get(k string) any { return m[k] }

func (m narrState) num(k string) (float64, bool) {
	f, ok := m[k].(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func (m narrState) str(k string) string {
	s, _ := m[k].(string)
	return s
}

func (m narrState) boolean(k string) (bool, bool) {
	b, ok := m[k].(bool)
	return b, ok
}

// strings reads a list of strings (nil when absent or not a list).
func (m narrState) strings(k string) []string {
	l, ok := m[k].([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (m narrState) obj(k string) narrState {
	o, _ := m[k].(map[string]any)
	return narrState(o)
}

// list reads a list of objects (nil when absent or not a list).
func (m narrState) list(k string) []narrState {
	l, ok := m[k].([]any)
	if !ok {
		return nil
	}
	out := make([]narrState, 0, len(l))
	for _, x := range l {
		if o, ok := x.(map[string]any); ok {
			out = append(out, narrState(o))
		}
	}
	return out
}

func narrRaw(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "empty"
	}
	return narrClean(string(raw), 200)
}

// ---- formatting ----

// narrNum formats a number with at most 3 decimals, trailing zeros trimmed.
func narrNum(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	if math.Abs(f) >= 1e15 {
		return strconv.FormatFloat(f, 'g', 4, 64)
	}
	s := strconv.FormatFloat(f, 'f', 3, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// narrSigned formats a change with its sign ("+0.1", "-0.05", "0").
func narrSigned(f float64) string {
	s := narrNum(f)
	if s != "0" && !strings.HasPrefix(s, "-") && !math.IsNaN(f) {
		s = "+" + s
	}
	return s
}

func narrDuration(sec float64) string {
	switch {
	case math.IsNaN(sec) || sec < 0:
		return "an unknown time"
	case sec < 1:
		return "less than a second"
	case sec < 60:
		return narrUnit(math.Round(sec), "second")
	case sec < 3600:
		return narrUnit(sec/60, "minute")
	case sec < 86400:
		return narrUnit(sec/3600, "hour")
	}
	return narrUnit(sec/86400, "day")
}

func narrUnit(v float64, unit string) string {
	r := math.Round(v*10) / 10
	s := narrNum(r)
	if r != 1 {
		unit += "s"
	}
	if r != v {
		return "about " + s + " " + unit
	}
	return s + " " + unit
}

func narrCount(n int, one, many string) string {
	switch n {
	case 0:
		return "no " + many
	case 1:
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// narrCountWord spells small counts out, for the start of a sentence.
func narrCountWord(n int, one, many string) string {
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	if n >= 0 && n < len(words) {
		if n == 1 {
			return words[n] + " " + one
		}
		return words[n] + " " + many
	}
	return strconv.Itoa(n) + " " + many
}

func narrPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func narrIsAre(n int, one, many string) string {
	if n == 1 {
		return "was 1 " + one
	}
	return "were " + strconv.Itoa(n) + " " + many
}

// narrDim names a dimension in words.
func narrDim(d string) string {
	if g, ok := narrDimensions[d]; ok {
		return g[0]
	}
	if d == "" {
		return "an unnamed dimension"
	}
	return narrClean(strings.ReplaceAll(d, "_", " "), 80)
}

// narrVeto names a veto: a dimension, or an invariant ("invariant:<name>").
func narrVeto(v string) string {
	if name, ok := strings.CutPrefix(v, "invariant:"); ok {
		return "the invariant " + narrQuote(name, 80)
	}
	return narrDim(v)
}

func narrHuman(s string) string { return narrClean(strings.ReplaceAll(s, "_", " "), 80) }

func narrCapital(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 || r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}

func narrJoin(items []string, conj string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	case 2:
		return items[0] + " " + conj + " " + items[1]
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + conj + " " + items[len(items)-1]
}

func narrJoinClean(items []string, limit int) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = narrClean(s, limit)
	}
	return strings.Join(out, ", ")
}

func narrOr(s, alt string) string {
	if s == "" || s == `""` {
		return alt
	}
	return s
}

// narrQuote quotes a recorded string, cleaned and cut to limit runes.
func narrQuote(s string, limit int) string { return `"` + narrClean(s, limit) + `"` }

// narrClean makes a recorded string safe for one line of text: control
// characters become spaces, invalid UTF-8 is replaced, and it is cut to limit
// runes with an ellipsis.
func narrClean(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	return narrTrunc(s, limit)
}

func narrTrunc(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit]) + "…"
}
