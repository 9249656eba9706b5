package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// newTestCA creates a CA in a temporary directory whose clock is *clock.
func newTestCA(t testing.TB, clock *time.Time) *CA {
	t.Helper()
	ca, err := InitCA(t.TempDir(), *clock)
	if err != nil {
		t.Fatalf("InitCA: %v", err)
	}
	ca.now = func() time.Time { return *clock }
	return ca
}

// pool returns a pool holding only the CA certificate.
func (ca *CA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Certificate())
	return p
}

func TestInitCA(t *testing.T) {
	now := time.Now()
	dir := filepath.Join(t.TempDir(), "nested", "ca")
	ca, err := InitCA(dir, now)
	if err != nil {
		t.Fatalf("InitCA: %v", err)
	}
	// InitCA sets the modes explicitly, so they do not depend on the umask.
	for _, f := range []struct {
		name string
		want fs.FileMode
	}{
		{"", 0o700},
		{CACertFile, 0o644},
		{CAKeyFile, 0o600},
	} {
		fi, err := os.Stat(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatalf("Stat(%q): %v", f.name, err)
		}
		if got := fi.Mode().Perm(); got != f.want {
			t.Errorf("mode of %q: got %04o, want %04o", f.name, got, f.want)
		}
	}

	c := ca.Certificate()
	checks := []struct {
		name      string
		got, want any
	}{
		{"common name", c.Subject.CommonName, "Vigil interception CA"},
		{"organization", strings.Join(c.Subject.Organization, ","), "Vigil"},
		{"is CA", c.IsCA && c.BasicConstraintsValid, true},
		{"max path len zero", c.MaxPathLen == 0 && c.MaxPathLenZero, true},
		{"key usage", c.KeyUsage, x509.KeyUsageCertSign | x509.KeyUsageCRLSign},
		{"key algorithm", c.PublicKeyAlgorithm, x509.ECDSA},
		{"curve", c.PublicKey.(*ecdsa.PublicKey).Curve, elliptic.P256()},
		{"not before", c.NotBefore.Unix(), now.Add(-time.Hour).Unix()},
		{"not after", c.NotAfter.Unix(), now.AddDate(10, 0, 0).Unix()},
		{"subject key id length", len(c.SubjectKeyId), 20},
		{"serial positive", c.SerialNumber.Sign(), 1},
		{"serial at most 128 bits", c.SerialNumber.BitLen() <= 128, true},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s: got %v, want %v", ck.name, ck.got, ck.want)
		}
	}

	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := pem.Decode(keyPEM); b == nil || b.Type != "PRIVATE KEY" {
		t.Errorf("ca.key: got %q, want a PEM PRIVATE KEY (PKCS #8) block", keyPEM)
	} else if _, err := x509.ParsePKCS8PrivateKey(b.Bytes); err != nil {
		t.Errorf("ca.key: ParsePKCS8PrivateKey: %v", err)
	}
}

func TestInitCARefusesToOverwrite(t *testing.T) {
	tests := []struct {
		name    string
		present string
	}{
		{"certificate present", CACertFile},
		{"key present", CAKeyFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, tt.present)
			if err := os.WriteFile(p, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := InitCA(dir, time.Now())
			if !errors.Is(err, fs.ErrExist) {
				t.Fatalf("InitCA: got %v, want an error wrapping fs.ErrExist", err)
			}
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error: got %q, want it to name %s", err, p)
			}
			if b, _ := os.ReadFile(p); string(b) != "keep me" {
				t.Errorf("%s: got %q, want it untouched", tt.present, b)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("directory: got %d files, want only the existing one", len(entries))
			}
		})
	}
	t.Run("second init", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := InitCA(dir, time.Now()); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(filepath.Join(dir, CACertFile))
		if _, err := InitCA(dir, time.Now()); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("second InitCA: got %v, want an error wrapping fs.ErrExist", err)
		}
		if after, _ := os.ReadFile(filepath.Join(dir, CACertFile)); string(after) != string(before) {
			t.Errorf("ca.crt: changed by the refused InitCA")
		}
	})
}

func TestLoadCA(t *testing.T) {
	dir := t.TempDir()
	orig, err := InitCA(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := LoadCA(dir)
	if err != nil {
		t.Fatalf("LoadCA: %v", err)
	}
	if !ca.Certificate().Equal(orig.Certificate()) {
		t.Errorf("LoadCA: got a different certificate than InitCA wrote")
	}
	leaf, err := ca.Leaf("example.com")
	if err != nil {
		t.Fatalf("Leaf: %v", err)
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: orig.pool()}); err != nil {
		t.Errorf("leaf of the loaded CA against the written CA: %v", err)
	}
}

// writePEM writes one PEM block to path with mode.
func writePEM(t *testing.T, path, typ string, der []byte, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// copyFile copies src to dst with mode.
func copyFile(t *testing.T, src, dst string, mode fs.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

func TestLoadCARefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
		is    error
	}{
		{"missing files", func(t *testing.T, dir string) {}, "vigil ca init", fs.ErrNotExist},
		{"missing key", func(t *testing.T, dir string) {
			mustInit(t, dir, time.Now())
			_ = os.Remove(filepath.Join(dir, CAKeyFile))
		}, "reading the CA key", fs.ErrNotExist},
		{"key readable by others", func(t *testing.T, dir string) {
			mustInit(t, dir, time.Now())
			_ = os.Chmod(filepath.Join(dir, CAKeyFile), 0o644)
		}, "chmod 600", nil},
		{"key readable by group", func(t *testing.T, dir string) {
			mustInit(t, dir, time.Now())
			_ = os.Chmod(filepath.Join(dir, CAKeyFile), 0o640)
		}, "mode 0640", nil},
		{"certificate not a CA", func(t *testing.T, dir string) {
			key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "leaf"},
				NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
			if err != nil {
				t.Fatal(err)
			}
			pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
			writePEM(t, filepath.Join(dir, CACertFile), "CERTIFICATE", der, 0o644)
			writePEM(t, filepath.Join(dir, CAKeyFile), "PRIVATE KEY", pkcs8, 0o600)
		}, "is not a CA certificate", nil},
		{"mismatched key", func(t *testing.T, dir string) {
			mustInit(t, dir, time.Now())
			other := t.TempDir()
			mustInit(t, other, time.Now())
			_ = os.Remove(filepath.Join(dir, CAKeyFile))
			copyFile(t, filepath.Join(other, CAKeyFile), filepath.Join(dir, CAKeyFile), 0o600)
		}, "does not match the certificate", nil},
		{"expired CA", func(t *testing.T, dir string) {
			mustInit(t, dir, time.Now().AddDate(-11, 0, 0))
		}, "expired at", nil},
		{"CA not yet valid", func(t *testing.T, dir string) {
			mustInit(t, dir, time.Now().Add(48*time.Hour))
		}, "not valid before", nil},
		{"garbage certificate", func(t *testing.T, dir string) {
			mustInit(t, dir, time.Now())
			_ = os.WriteFile(filepath.Join(dir, CACertFile), []byte("garbage"), 0o644)
		}, "no PEM CERTIFICATE block", nil},
		{"corrupt certificate", func(t *testing.T, dir string) {
			mustInit(t, dir, time.Now())
			writePEM(t, filepath.Join(dir, CACertFile), "CERTIFICATE", []byte("not DER"), 0o644)
		}, "parsing the CA certificate", nil},
		{"garbage key", func(t *testing.T, dir string) {
			mustInit(t, dir, time.Now())
			_ = os.WriteFile(filepath.Join(dir, CAKeyFile), []byte("garbage"), 0o600)
		}, "no PEM PRIVATE KEY block", nil},
		{"corrupt key", func(t *testing.T, dir string) {
			mustInit(t, dir, time.Now())
			writePEM(t, filepath.Join(dir, CAKeyFile), "PRIVATE KEY", []byte("not DER"), 0o600)
		}, "parsing the CA key", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			ca, err := LoadCA(dir)
			if err == nil {
				t.Fatalf("LoadCA: got a CA (%v), want an error containing %q", ca.Certificate().Subject, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadCA: got %q, want it to contain %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("LoadCA: got %v, want an error wrapping %v", err, tt.is)
			}
		})
	}
}

func mustInit(t *testing.T, dir string, now time.Time) {
	t.Helper()
	if _, err := InitCA(dir, now); err != nil {
		t.Fatalf("InitCA: %v", err)
	}
}

func TestLoadCAOtherKeyEncodings(t *testing.T) {
	dir := t.TempDir()
	mustInit(t, dir, time.Now())
	keyPEM, _ := os.ReadFile(filepath.Join(dir, CAKeyFile))
	b, _ := pem.Decode(keyPEM)
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(k.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(filepath.Join(dir, CAKeyFile))
	writePEM(t, filepath.Join(dir, CAKeyFile), "EC PRIVATE KEY", sec1, 0o600)
	if _, err := LoadCA(dir); err != nil {
		t.Errorf("LoadCA with a SEC 1 key: got %v, want nil", err)
	}
}

func TestLeafVerifies(t *testing.T) {
	clock := time.Now()
	ca := newTestCA(t, &clock)
	tests := []struct {
		name     string
		host     string
		verifyAs string
		wantDNS  []string
		wantIP   string
	}{
		{"DNS name", "api.example.com", "api.example.com", []string{"api.example.com"}, ""},
		{"upper case and trailing dot", "API.Example.COM.", "api.example.com", []string{"api.example.com"}, ""},
		{"IPv4", "127.0.0.1", "127.0.0.1", nil, "127.0.0.1"},
		{"IPv6", "::1", "::1", nil, "::1"},
		{"bracketed IPv6", "[2001:db8::7]", "2001:db8::7", nil, "2001:db8::7"},
		{"IPv4-mapped IPv6", "::ffff:10.0.0.1", "10.0.0.1", nil, "10.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ca.Leaf(tt.host)
			if err != nil {
				t.Fatalf("Leaf(%q): %v", tt.host, err)
			}
			leaf := c.Leaf
			if leaf == nil {
				t.Fatalf("Leaf(%q): got no parsed Leaf, want it set", tt.host)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: tt.verifyAs, Roots: ca.pool(), CurrentTime: clock,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				t.Errorf("Verify(%s): %v", tt.verifyAs, err)
			}
			if got := strings.Join(leaf.DNSNames, ","); got != strings.Join(tt.wantDNS, ",") {
				t.Errorf("DNSNames: got %q, want %q", got, tt.wantDNS)
			}
			var ips []string
			for _, ip := range leaf.IPAddresses {
				ips = append(ips, ip.String())
			}
			if got := strings.Join(ips, ","); got != tt.wantIP {
				t.Errorf("IPAddresses: got %q, want %q", got, tt.wantIP)
			}
			if got := len(c.Certificate); got != 2 {
				t.Fatalf("chain: got %d certificates, want 2 (leaf, CA)", got)
			}
			if string(c.Certificate[1]) != string(ca.Certificate().Raw) {
				t.Errorf("chain[1]: got another certificate, want the CA")
			}
			if string(c.Certificate[0]) != string(leaf.Raw) {
				t.Errorf("chain[0]: got another certificate, want the leaf")
			}
			if got, want := leaf.NotBefore.Unix(), clock.Add(-time.Hour).Unix(); got != want {
				t.Errorf("NotBefore: got %d, want %d", got, want)
			}
			if got, want := leaf.NotAfter.Unix(), clock.Add(7*24*time.Hour).Unix(); got != want {
				t.Errorf("NotAfter: got %d, want %d", got, want)
			}
			if leaf.IsCA {
				t.Errorf("IsCA: got true, want false")
			}
			if pk, ok := c.PrivateKey.(*ecdsa.PrivateKey); !ok || pk.Curve != elliptic.P256() {
				t.Errorf("PrivateKey: got %T, want an ECDSA P-256 key", c.PrivateKey)
			}
		})
	}
}

func TestLeafInvalidHost(t *testing.T) {
	clock := time.Now()
	ca := newTestCA(t, &clock)
	for _, host := range []string{"", "example.com:443", "bad host", "a..b", ".", "exa*mple.com", "bücher.example",
		strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 127) + "com", "[::1"} {
		t.Run(host, func(t *testing.T) {
			if _, err := ca.Leaf(host); err == nil || !strings.Contains(err.Error(), "not a DNS name or an IP address") {
				t.Errorf("Leaf(%q): got %v, want an error saying it is not a DNS name or an IP address", host, err)
			}
			if _, err := ca.TLSConfig(host); err == nil {
				t.Errorf("TLSConfig(%q): got nil error, want one", host)
			}
		})
	}
	if got := ca.generated.Load(); got != 0 {
		t.Errorf("generated: got %d, want 0", got)
	}
}

func TestLeafCacheAndRenewal(t *testing.T) {
	start := time.Now()
	clock := start
	ca := newTestCA(t, &clock)
	first, err := ca.Leaf("example.com")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name     string
		advance  time.Duration // from start
		host     string
		wantSame bool
		wantGen  int64
	}{
		{"cached", 0, "example.com", true, 1},
		{"same name, other spelling", 0, "EXAMPLE.com.", true, 1},
		{"a day later", 24 * time.Hour, "example.com", true, 1},
		{"61 minutes left", 7*24*time.Hour - 61*time.Minute, "example.com", true, 1},
		{"59 minutes left: renewed", 7*24*time.Hour - 59*time.Minute, "example.com", false, 2},
	}
	for _, s := range steps {
		clock = start.Add(s.advance)
		got, err := ca.Leaf(s.host)
		if err != nil {
			t.Fatalf("%s: Leaf: %v", s.name, err)
		}
		if same := got == first; same != s.wantSame {
			t.Errorf("%s: same certificate: got %v, want %v", s.name, same, s.wantSame)
		}
		if g := ca.generated.Load(); g != s.wantGen {
			t.Errorf("%s: generated: got %d, want %d", s.name, g, s.wantGen)
		}
		if !s.wantSame {
			if want := clock.Add(7 * 24 * time.Hour); !got.Leaf.NotAfter.Equal(want.Truncate(time.Second)) {
				t.Errorf("%s: NotAfter: got %v, want %v", s.name, got.Leaf.NotAfter, want)
			}
			again, _ := ca.Leaf(s.host)
			if again != got {
				t.Errorf("%s: renewed certificate not cached", s.name)
			}
		}
	}
}

func TestLeafCappedByCA(t *testing.T) {
	// A CA that expires two hours from "now".
	now := time.Now()
	dir := t.TempDir()
	ca, err := InitCA(dir, now.AddDate(-10, 0, 0).Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	clock := now
	ca.now = func() time.Time { return clock }
	first, err := ca.Leaf("example.com")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := first.Leaf.NotAfter, ca.Certificate().NotAfter; !got.Equal(want) {
		t.Errorf("NotAfter: got %v, want the CA's %v", got, want)
	}
	clock = now.Add(90 * time.Minute) // 30 minutes left, but renewing would not help
	if got, err := ca.Leaf("example.com"); err != nil || got != first {
		t.Errorf("30 minutes before the CA expires: got (%p, %v), want the cached leaf %p", got, err, first)
	}
	if got := ca.generated.Load(); got != 1 {
		t.Errorf("generated: got %d, want 1", got)
	}
	clock = now.Add(3 * time.Hour)
	if _, err := ca.Leaf("example.com"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("after the CA expired: got %v, want an error saying it expired", err)
	}
	if _, err := ca.TLSConfig("example.com"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("TLSConfig after the CA expired: got %v, want an error saying it expired", err)
	}
}

func TestLeafConcurrentSignsOnce(t *testing.T) {
	clock := time.Now()
	ca := newTestCA(t, &clock)
	const n = 64
	got := make([]*tls.Certificate, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			c, err := ca.Leaf("concurrent.example.com")
			if err != nil {
				t.Errorf("Leaf: %v", err)
			}
			got[i] = c
		})
	}
	close(start)
	wg.Wait()
	if g := ca.generated.Load(); g != 1 {
		t.Errorf("generated: got %d, want 1", g)
	}
	for i, c := range got {
		if c != got[0] {
			t.Fatalf("caller %d: got another certificate than caller 0", i)
		}
	}
}

func TestLeafCacheBounded(t *testing.T) {
	clock := time.Now()
	ca := newTestCA(t, &clock)
	ca.maxLeaves = 3
	hosts := []string{"a.example", "b.example", "c.example", "d.example"}
	certs := map[string]*tls.Certificate{}
	for i, h := range hosts {
		clock = clock.Add(time.Minute) // a later leaf expires later
		c, err := ca.Leaf(h)
		if err != nil {
			t.Fatal(err)
		}
		certs[h] = c
		if got, want := len(ca.leaves), min(i+1, 3); got != want {
			t.Errorf("after %s: cache holds %d, want %d", h, got, want)
		}
	}
	if got := ca.order.Len(); got != len(ca.leaves) {
		t.Errorf("order list: got %d, want %d (the cache size)", got, len(ca.leaves))
	}
	tests := []struct {
		name   string
		host   string
		cached bool
	}{
		{"newest kept", "d.example", true},
		{"second newest kept", "c.example", true},
		{"oldest evicted", "a.example", false},
	}
	for _, tt := range tests {
		before := ca.generated.Load()
		c, err := ca.Leaf(tt.host)
		if err != nil {
			t.Fatal(err)
		}
		if cached := c == certs[tt.host] && ca.generated.Load() == before; cached != tt.cached {
			t.Errorf("%s: served from the cache: got %v, want %v", tt.name, cached, tt.cached)
		}
	}
	if got := len(ca.leaves); got != 3 {
		t.Errorf("cache holds %d, want 3", got)
	}
}

func TestTLSHandshake(t *testing.T) {
	clock := time.Now()
	ca := newTestCA(t, &clock)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "intercepted")
	}))
	cfg, err := ca.TLSConfig("localhost")
	if err != nil {
		t.Fatalf("TLSConfig: %v", err)
	}
	srv.TLS = cfg
	srv.StartTLS()
	defer srv.Close()

	tests := []struct {
		name    string
		roots   *x509.CertPool // nil: the system roots
		wantErr bool
	}{
		{"client trusting the CA", ca.pool(), false},
		{"client with the system roots", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// ServerName sends SNI "localhost": with no SNI httptest's own
			// certificate would be served.
			client := &http.Client{Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: tt.roots, ServerName: "localhost"},
			}}
			defer client.CloseIdleConnections()
			resp, err := client.Get(srv.URL)
			if tt.wantErr {
				var unknown x509.UnknownAuthorityError
				if err == nil {
					resp.Body.Close()
					t.Fatalf("Get: got %s, want an unknown authority error", resp.Status)
				}
				if !errors.As(err, &unknown) {
					t.Errorf("Get: got %v, want an x509.UnknownAuthorityError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if string(body) != "intercepted" {
				t.Errorf("body: got %q, want %q", body, "intercepted")
			}
			if got := resp.TLS.PeerCertificates[0].Issuer.CommonName; got != "Vigil interception CA" {
				t.Errorf("issuer: got %q, want %q", got, "Vigil interception CA")
			}
		})
	}
}

// TestTLSConfigServerName checks which name the certificate is signed for
// and what is negotiated, over an in-memory connection.
func TestTLSConfigServerName(t *testing.T) {
	clock := time.Now()
	ca := newTestCA(t, &clock)
	tests := []struct {
		name       string
		tunnelHost string // TLSConfig's host
		serverName string // the client's ServerName (SNI unless an IP)
		maxVersion uint16
		wantErr    bool
		wantProto  string
	}{
		{"SNI used", "tunnel.example", "sni.example", 0, false, "http/1.1"},
		{"no SNI for an IP: host used", "127.0.0.1", "127.0.0.1", 0, false, "http/1.1"},
		{"no SNI, host another IP", "10.0.0.1", "127.0.0.1", 0, true, ""},
		{"TLS 1.1 refused", "tunnel.example", "tunnel.example", tls.VersionTLS11, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ca.TLSConfig(tt.tunnelHost)
			if err != nil {
				t.Fatalf("TLSConfig: %v", err)
			}
			c1, c2 := net.Pipe()
			defer c1.Close()
			defer c2.Close()
			server := tls.Server(c1, cfg)
			client := tls.Client(c2, &tls.Config{RootCAs: ca.pool(), ServerName: tt.serverName,
				NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS10, MaxVersion: tt.maxVersion})
			done := make(chan error, 1)
			go func() {
				done <- server.Handshake()
				c1.Close() // unblock the client if the server gave up
			}()
			cerr := client.Handshake()
			if cerr != nil {
				c2.Close() // unblock the server if the client gave up
			}
			serr := <-done
			if tt.wantErr {
				if cerr == nil {
					t.Errorf("client handshake: got nil error, want one")
				}
				return
			}
			if cerr != nil || serr != nil {
				t.Fatalf("handshake: client %v, server %v", cerr, serr)
			}
			st := client.ConnectionState()
			if st.NegotiatedProtocol != tt.wantProto {
				t.Errorf("ALPN: got %q, want %q", st.NegotiatedProtocol, tt.wantProto)
			}
			if err := st.PeerCertificates[0].VerifyHostname(tt.serverName); err != nil {
				t.Errorf("peer certificate: %v", err)
			}
		})
	}
}

func BenchmarkLeafCached(b *testing.B) {
	clock := time.Now()
	ca := newTestCA(b, &clock)
	if _, err := ca.Leaf("bench.example.com"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ca.Leaf("bench.example.com"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLeafGenerate(b *testing.B) {
	clock := time.Now()
	ca := newTestCA(b, &clock)
	i := 0
	for b.Loop() {
		i++
		if _, err := ca.Leaf(fmt.Sprintf("h%d.example.com", i)); err != nil {
			b.Fatal(err)
		}
	}
}
