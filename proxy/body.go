package proxy

import (
	"bytes"
	"io"
	"net/http"

	"github.com/vigilhq/vigil/proxy/toolcall"
)

// inspectBody reads the first toolcall.InspectLimit bytes of the request's
// body for parsing and puts them back in front of the rest, so that the
// whole body is forwarded unchanged. truncated reports a body longer than
// the limit (only the prefix is returned).
func inspectBody(req *http.Request) (prefix []byte, truncated bool, err error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, false, nil
	}
	orig := req.Body
	if cl := req.ContentLength; cl >= 0 && cl <= toolcall.InspectLimit {
		buf := make([]byte, cl)
		if _, err := io.ReadFull(orig, buf); err != nil {
			return nil, false, err
		}
		_ = orig.Close()
		req.Body = io.NopCloser(bytes.NewReader(buf))
		// The transport may replay the body on a stale pooled connection.
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
		return buf, false, nil
	}
	var b bytes.Buffer
	if _, err := io.CopyN(&b, orig, toolcall.InspectLimit+1); err != nil && err != io.EOF {
		return nil, false, err
	}
	buf := b.Bytes()
	if len(buf) <= toolcall.InspectLimit {
		_ = orig.Close()
		req.Body = io.NopCloser(bytes.NewReader(buf))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
		return buf, false, nil
	}
	req.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf), orig), orig}
	req.GetBody = nil
	return buf[:toolcall.InspectLimit], true, nil
}
