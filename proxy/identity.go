package proxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// identify returns the agent a request comes from (API.md section 4):
// Proxy-Authorization Basic with the agent's id and token, or, without
// credentials, the sidecar's default agent. Wrong credentials never fall
// back to the default agent.
func (p *Proxy) identify(h http.Header) (string, bool) {
	v := h.Get("Proxy-Authorization")
	if v == "" {
		return p.defAgent, p.defAgent != ""
	}
	id, token, ok := parseBasic(v)
	if !ok {
		return "", false
	}
	want, known := p.tokens[id]
	// Compare digests, so neither the token's length nor whether the agent
	// exists shows in the time taken.
	got, exp := sha256.Sum256([]byte(token)), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(got[:], exp[:]) != 1 || !known || want == "" {
		return "", false
	}
	return id, true
}

// parseBasic splits "Basic base64(id:token)".
func parseBasic(v string) (id, token string, ok bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return "", "", false
	}
	id, token, ok = strings.Cut(string(raw), ":")
	if !ok || id == "" {
		return "", "", false
	}
	return id, token, true
}
