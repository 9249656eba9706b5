package toolcall

import (
	"bytes"
	"net/url"
	"strings"
)

// httpParams returns the parameters of a plain HTTP action: the query
// parameters, then the fields of a JSON object body or of a form body, the
// body winning on a clash. body is the body's first JSON value when isJSON.
func httpParams(r Request, body []byte, isJSON bool) map[string]any {
	var fields map[string]any
	switch {
	case isJSON && body[0] == '{':
		fields = decodeObject(body)
	case !isJSON && isForm(r.ContentType):
		form := r.Body
		if r.Truncated {
			// The last pair may be cut short ("amount=50" of "amount=5000"):
			// keep only the complete ones.
			form = form[:max(bytes.LastIndexByte(form, '&'), 0)]
		}
		fields = addPairs(nil, string(form))
	}
	if r.RawQuery == "" {
		if fields == nil {
			return map[string]any{}
		}
		return fields
	}
	params := addPairs(make(map[string]any, strings.Count(r.RawQuery, "&")+1+len(fields)), r.RawQuery)
	for k, v := range fields {
		params[k] = v
	}
	return params
}

// addPairs adds the pairs of a URL-encoded query or form to dst (allocated
// when nil): a single value is a string, repeated values are an []any of
// strings. Both '&' and ';' separate pairs (';' did in older servers, so a
// parameter behind one is not hidden); a name or value that does not decode
// is kept as sent.
func addPairs(dst map[string]any, s string) map[string]any {
	if dst == nil {
		dst = make(map[string]any)
	}
	for s != "" {
		pair := s
		if i := strings.IndexAny(s, "&;"); i >= 0 {
			pair, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, v = queryUnescape(k), queryUnescape(v)
		switch old := dst[k].(type) {
		case nil:
			dst[k] = v
		case string:
			dst[k] = []any{old, v}
		case []any:
			dst[k] = append(old, v)
		}
	}
	return dst
}

func queryUnescape(s string) string {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s
	}
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// isForm reports whether a Content-Type is application/x-www-form-urlencoded.
func isForm(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded")
}
