package governor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// ActionDigest identifies an action by its agent, type, target and
// parameters: the lowercase hex SHA-256 of their JSON encoding (object keys
// sorted). An approval is bound to this digest, and a resubmission of a denied
// action is recognised by it.
func ActionDigest(agentID string, a *Action) string {
	b, err := json.Marshal(struct {
		Agent  string         `json:"agent"`
		Type   string         `json:"type"`
		Target string         `json:"target"`
		Params map[string]any `json:"parameters"`
	}{agentID, a.Type, a.Target, a.Parameters})
	if err != nil {
		// Parameters that JSON cannot encode (NaN, channels) still get a
		// stable digest of what can be said about them.
		b = []byte(agentID + "\x00" + a.Type + "\x00" + a.Target + "\x00" + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
