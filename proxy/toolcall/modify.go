package toolcall

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Modification is what a MODIFY verdict changes in a forwarded request.
type Modification struct {
	// SetQuery sets query parameters, replacing every existing value.
	SetQuery map[string]string
	// SetHeaders sets headers, replacing every existing value.
	SetHeaders map[string]string
}

// Empty reports whether the modification changes nothing.
func (m Modification) Empty() bool { return len(m.SetQuery) == 0 && len(m.SetHeaders) == 0 }

// Apply sets the query parameters on u and the headers on h, replacing
// existing values. Parameters it does not set keep their order and their
// encoding in the query (joined by '&', also where ';' separated them, since
// Parse reads ';' as a separator too); those it sets are appended in key
// order. A nil u or h is left alone.
func (m Modification) Apply(u *url.URL, h http.Header) {
	if u != nil && len(m.SetQuery) > 0 {
		var b strings.Builder
		for pair := range strings.FieldsFuncSeq(u.RawQuery, isQuerySep) {
			if pair == "" {
				continue
			}
			k, _, _ := strings.Cut(pair, "=")
			if uk, err := url.QueryUnescape(k); err == nil {
				k = uk
			}
			if _, set := m.SetQuery[k]; set {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(pair)
		}
		for _, k := range slices.Sorted(maps.Keys(m.SetQuery)) {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(k))
			b.WriteByte('=')
			b.WriteString(url.QueryEscape(m.SetQuery[k]))
		}
		u.RawQuery = b.String()
		u.ForceQuery = false
	}
	if h != nil {
		for k, v := range m.SetHeaders {
			h.Set(k, v)
		}
	}
}

// forbiddenHeaders frame or route the request; a route may not set them.
var forbiddenHeaders = []string{"Connection", "Content-Length", "Host", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// validate returns the offending key and why.
func (m Modification) validate() (string, error) {
	for k := range m.SetQuery {
		if k == "" {
			return "modify.set_query", fmt.Errorf("empty parameter name")
		}
	}
	for k, v := range m.SetHeaders {
		if !isToken(k) {
			return "modify.set_headers", fmt.Errorf("%q: not a valid header name", k)
		}
		if slices.Contains(forbiddenHeaders, http.CanonicalHeaderKey(k)) {
			return "modify.set_headers", fmt.Errorf("%q: a route may not set this header", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return "modify.set_headers", fmt.Errorf("%q: the value holds a line break or NUL", k)
		}
	}
	return "", nil
}

func isQuerySep(r rune) bool { return r == '&' || r == ';' }

// isToken reports whether s is an RFC 9110 token (a valid header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
