package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"

	"github.com/gin-gonic/gin"
)

// apiKeyHeader carries the API key of every authenticated request.
const apiKeyHeader = "X-Api-Key"

// principal is the authenticated caller of a request.
type principal struct {
	Name string
	Role Role
}

type principalKey struct{}

// withPrincipal returns ctx carrying p.
func withPrincipal(ctx context.Context, p principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalFrom returns the authenticated caller stored in ctx by the
// authentication middleware; ok is false on a public route.
func principalFrom(ctx context.Context) (p principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(principal)
	return p, ok
}

// keyring holds the configured keys as SHA-256 digests, so that every
// comparison has the same length and takes the same time.
type keyring struct {
	entries []keyEntry
}

type keyEntry struct {
	digest [sha256.Size]byte
	who    principal
}

func newKeyring(keys []Key) *keyring {
	k := &keyring{entries: make([]keyEntry, len(keys))}
	for i, key := range keys {
		k.entries[i] = keyEntry{
			digest: sha256.Sum256([]byte(key.Key)),
			who:    principal{Name: key.Principal, Role: key.Role},
		}
	}
	return k
}

// lookup finds the principal of key. It compares the key's digest with every
// configured digest in constant time and never stops at the first match, so
// the time taken does not depend on which key matched or whether one did.
func (k *keyring) lookup(key string) (principal, bool) {
	d := sha256.Sum256([]byte(key))
	match := -1
	for i := range k.entries {
		eq := subtle.ConstantTimeCompare(d[:], k.entries[i].digest[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return principal{}, false
	}
	return k.entries[match].who, true
}

// require authenticates the request by its X-Api-Key header and checks that
// the caller's role includes need; the principal goes into the request
// context.
func (s *Server) require(need Role) handlerFunc {
	return func(c *gin.Context) error {
		key := c.GetHeader(apiKeyHeader)
		if key == "" {
			return errUnauthenticated("missing " + apiKeyHeader + " header")
		}
		who, ok := s.keys.lookup(key)
		if !ok {
			return errUnauthenticated("unknown API key")
		}
		if !who.Role.allows(need) {
			return errForbidden("role %s may not %s %s (needs %s)", who.Role, c.Request.Method, c.FullPath(), need)
		}
		c.Request = c.Request.WithContext(withPrincipal(c.Request.Context(), who))
		return nil
	}
}
