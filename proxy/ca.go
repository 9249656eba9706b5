package proxy

import (
	"container/list"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
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
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The files of an interception CA directory (`vigil ca init --out DIR`,
// proxy.ca_dir in the configuration).
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

const (
	caValidityYears = 10
	// leafValidity is how long a leaf is valid from the moment it is
	// signed (capped by the CA's own NotAfter); leafBackdate is how far its
	// NotBefore lies in the past, for clients whose clocks run slow.
	leafValidity = 7 * 24 * time.Hour
	leafBackdate = time.Hour
	// leafRefresh: a cached leaf with less validity left than this is
	// signed again.
	leafRefresh = time.Hour
	// defaultMaxLeaves bounds the leaf cache (hosts).
	defaultMaxLeaves = 10_000
	// maxKeyFileSize bounds what LoadCA reads from ca.key.
	maxKeyFileSize = 1 << 20
)

// CA is the interception certificate authority: it signs per-host leaf
// certificates for intercepted CONNECT tunnels and caches them until shortly
// before they expire.
//
// Leaves are ECDSA P-256 certificates for one host (a DNS name in DNSNames or
// an IP address in IPAddresses), valid from an hour ago for 7 days but never
// beyond the CA's own expiry, with extended key usage server auth; the
// chain served is [leaf, CA]. All leaves of a CA share one private key,
// generated in memory when the CA is created or loaded and never written to
// disk: a fresh key per host would add a key generation to every first
// connection to a host and buys nothing here, since that key would live in
// the same process memory as the CA key that can sign any host anyway.
//
// The cache holds at most 10,000 hosts. When it is full, the leaf signed
// longest ago is evicted; since every leaf has the same validity (or is
// capped at the same CA expiry), that is also the leaf that expires first.
// A leaf is signed again when less than an hour of its validity remains,
// unless it already ends with the CA (signing again would not help).
//
// A CA is safe for concurrent use; concurrent requests for the same host
// wait for a single signature.
type CA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	leafKey *ecdsa.PrivateKey

	now       func() time.Time // the clock; time.Now outside tests
	maxLeaves int
	generated atomic.Int64 // leaves signed, for tests

	mu     sync.Mutex
	leaves map[string]*leafEntry // by canonical host
	order  *list.List            // of canonical hosts, oldest signature first
}

// leafEntry is one cached (or in-flight) leaf. cert and err are written
// once, before done is closed, and only read after it is.
type leafEntry struct {
	done chan struct{}
	cert *tls.Certificate
	err  error
	elem *list.Element // position in CA.order
}

// newCA returns a CA for a parsed certificate and its key, with a fresh leaf
// key and an empty cache.
func newCA(cert *x509.Certificate, key crypto.Signer) (*CA, error) {
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("proxy: generating the leaf key: %w", err)
	}
	return &CA{
		cert:      cert,
		key:       key,
		leafKey:   leafKey,
		now:       time.Now,
		maxLeaves: defaultMaxLeaves,
		leaves:    make(map[string]*leafEntry),
		order:     list.New(),
	}, nil
}

// InitCA creates dir (mode 0700, if missing) and writes a new ECDSA P-256 CA
// into it: dir/ca.crt (PEM certificate, mode 0644) and dir/ca.key (PEM
// PKCS #8 private key, mode 0600). It refuses, with an error wrapping
// fs.ErrExist, to overwrite an existing ca.crt or ca.key. The certificate
// has subject CN "Vigil interception CA", O "Vigil", is valid from an hour
// before now for 10 years, and may sign end-entity certificates only
// (path length zero).
func InitCA(dir string, now time.Time) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("proxy: creating the CA directory: %w", err)
	}
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Lstat(p); err == nil {
			return nil, fmt.Errorf("proxy: %s already exists, refusing to overwrite it: %w", p, fs.ErrExist)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("proxy: checking for an existing CA: %w", err)
		}
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("proxy: generating the CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	ski, err := subjectKeyID(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Vigil interception CA", Organization: []string{"Vigil"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(caValidityYears, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		SubjectKeyId:          ski,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("proxy: signing the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("proxy: parsing the new CA certificate: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("proxy: encoding the CA key: %w", err)
	}

	// The key first: a CA certificate without its key is useless, and the
	// exclusive create closes the race with a concurrent `vigil ca init`.
	if err := writeNewFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
		return nil, err
	}
	if err := writeNewFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		_ = os.Remove(keyPath)
		return nil, err
	}
	return newCA(cert, key)
}

// writeNewFile creates path (which must not exist) with exactly mode,
// whatever the umask, and writes data to it; on failure nothing is left.
func writeNewFile(path string, data []byte, mode fs.FileMode) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("proxy: %s already exists, refusing to overwrite it: %w", path, err)
		}
		return fmt.Errorf("proxy: writing the CA: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("proxy: writing the CA: %w", cerr)
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	if runtime.GOOS != "windows" {
		if err := f.Chmod(mode); err != nil {
			return fmt.Errorf("proxy: writing the CA: %w", err)
		}
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("proxy: writing the CA: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("proxy: writing the CA: %w", err)
	}
	return nil
}

// LoadCA reads the CA in dir/ca.crt and dir/ca.key (as written by InitCA;
// ca.key may also hold a SEC 1 EC or PKCS #1 RSA key, and of ca.crt the
// first certificate is used). It refuses a key file that group or others
// may access, a certificate that is not a CA's, a key that does not belong
// to the certificate, and a CA that is expired or not yet valid.
func LoadCA(dir string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("proxy: reading the CA certificate (create a CA with vigil ca init --out DIR): %w", err)
	}
	cert, err := parseCACert(certPath, certPEM)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readKeyFile(keyPath)
	if err != nil {
		return nil, err
	}
	key, err := parseCAKey(keyPath, keyPEM)
	if err != nil {
		return nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("proxy: the key in %s does not match the certificate in %s", keyPath, certPath)
	}
	return newCA(cert, key)
}

// readKeyFile reads the CA key after checking, on the open file, that only
// its owner may access it.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("proxy: reading the CA key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("proxy: reading the CA key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("proxy: the CA key %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("proxy: the CA key %s may be read by group or others (mode %04o); restrict it with: chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize))
	if err != nil {
		return nil, fmt.Errorf("proxy: reading the CA key: %w", err)
	}
	return b, nil
}

// parseCACert parses the first certificate in data and checks that it is a
// CA certificate valid now.
func parseCACert(path string, data []byte) (*x509.Certificate, error) {
	var block *pem.Block
	for {
		block, data = pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("proxy: %s holds no PEM CERTIFICATE block", path)
		}
		if block.Type == "CERTIFICATE" {
			break
		}
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("proxy: parsing the CA certificate %s: %w", path, err)
	}
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return nil, fmt.Errorf("proxy: %s is not a CA certificate (its basic constraints do not say CA)", path)
	}
	if cert.KeyUsage != 0 && cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("proxy: %s is not a CA certificate (its key usage does not allow signing certificates)", path)
	}
	now := time.Now()
	if now.After(cert.NotAfter) {
		return nil, fmt.Errorf("proxy: the CA certificate %s expired at %s; create a new CA with vigil ca init", path, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(cert.NotBefore) {
		return nil, fmt.Errorf("proxy: the CA certificate %s is not valid before %s (is the clock right?)", path, cert.NotBefore.UTC().Format(time.RFC3339))
	}
	return cert, nil
}

// parseCAKey parses the first private key block in data.
func parseCAKey(path string, data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("proxy: %s holds no PEM PRIVATE KEY block", path)
		}
		var key any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("proxy: parsing the CA key %s: %w", path, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("proxy: the CA key %s is a %T, which cannot sign", path, key)
		}
		return signer, nil
	}
}

// Certificate returns the CA certificate, which clients must trust. The
// caller must not modify it.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// Leaf returns the certificate for host, a DNS name or an IP address
// literal (IPv6 with or without brackets), without a port. It is signed on
// first use and cached; see CA for validity, renewal and eviction. Names
// are compared case-insensitively and without a trailing dot.
func (ca *CA) Leaf(host string) (*tls.Certificate, error) {
	name, ip, err := canonicalHost(host)
	if err != nil {
		return nil, err
	}
	now := ca.now()

	ca.mu.Lock()
	old := ca.leaves[name]
	if old != nil {
		select {
		case <-old.done:
			if old.err == nil && ca.fresh(old.cert.Leaf, now) {
				ca.mu.Unlock()
				return old.cert, nil
			}
		default: // being signed: wait for it
			ca.mu.Unlock()
			<-old.done
			return old.cert, old.err
		}
		ca.order.Remove(old.elem)
		delete(ca.leaves, name)
	}
	for len(ca.leaves) >= max(ca.maxLeaves, 1) {
		front := ca.order.Front()
		delete(ca.leaves, ca.order.Remove(front).(string))
	}
	e := &leafEntry{done: make(chan struct{})}
	e.elem = ca.order.PushBack(name)
	ca.leaves[name] = e
	ca.mu.Unlock()

	e.cert, e.err = ca.sign(name, ip, now)
	if e.err != nil {
		ca.mu.Lock()
		if ca.leaves[name] == e {
			ca.order.Remove(e.elem)
			delete(ca.leaves, name)
		}
		ca.mu.Unlock()
	}
	close(e.done)
	return e.cert, e.err
}

// fresh reports whether leaf may still be served at now without signing
// it again.
func (ca *CA) fresh(leaf *x509.Certificate, now time.Time) bool {
	if leaf.NotAfter.Sub(now) >= leafRefresh {
		return true
	}
	// A leaf that ends with the CA cannot be renewed: serve it to the end.
	return !leaf.NotAfter.Before(ca.cert.NotAfter) && now.Before(leaf.NotAfter)
}

// sign issues a leaf for the canonical host name (ip is valid when it is an
// address).
func (ca *CA) sign(name string, ip netip.Addr, now time.Time) (*tls.Certificate, error) {
	if !now.Before(ca.cert.NotAfter) {
		return nil, fmt.Errorf("proxy: the interception CA expired at %s; create a new one with vigil ca init",
			ca.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(leafValidity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"Vigil"}},
		NotBefore:             now.Add(-leafBackdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if len(name) <= 64 { // the upper bound of a common name
		tmpl.Subject.CommonName = name
	}
	if ip.IsValid() {
		tmpl.IPAddresses = []net.IP{ip.AsSlice()}
	} else {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("proxy: signing a certificate for %s: %w", name, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("proxy: parsing the certificate for %s: %w", name, err)
	}
	ca.generated.Add(1)
	return &tls.Certificate{
		Certificate: [][]byte{der, ca.cert.Raw},
		PrivateKey:  ca.leafKey,
		Leaf:        leaf,
	}, nil
}

// TLSConfig returns the server side TLS configuration for a tunnel to host
// (without a port) that is intercepted: what a goproxy ConnectAction's
// TLSConfig function returns. The certificate is chosen during the
// handshake, for the server name the client sends (SNI) or, when it sends
// none (as for an IP address), for host. It negotiates TLS 1.2 or later and
// offers HTTP/1.1 by ALPN.
func (ca *CA) TLSConfig(host string) (*tls.Config, error) {
	if _, _, err := canonicalHost(host); err != nil {
		return nil, err
	}
	if now := ca.now(); !now.Before(ca.cert.NotAfter) {
		return nil, fmt.Errorf("proxy: the interception CA expired at %s; create a new one with vigil ca init",
			ca.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := hello.ServerName
			if name == "" {
				name = host
			}
			return ca.Leaf(name)
		},
	}, nil
}

// canonicalHost returns the cache key of host (the address in canonical
// form, or the lower-case name without a trailing dot) and, for an address,
// the address.
func canonicalHost(host string) (string, netip.Addr, error) {
	h := host
	if len(h) > 2 && h[0] == '[' && h[len(h)-1] == ']' {
		h = h[1 : len(h)-1]
	}
	// Every address ends in a digit or holds a colon; checking first saves
	// the cached path ParseAddr's error allocation for names.
	if h != "" && ('0' <= h[len(h)-1] && h[len(h)-1] <= '9' || strings.Contains(h, ":")) {
		if a, err := netip.ParseAddr(h); err == nil {
			a = a.WithZone("").Unmap()
			return a.String(), a, nil
		}
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if !validDNSName(h) {
		return "", netip.Addr{}, fmt.Errorf("proxy: cannot issue a certificate for %q: not a DNS name or an IP address", host)
	}
	return h, netip.Addr{}, nil
}

// validDNSName reports whether name (lower case) is a host name we sign:
// at most 253 bytes of dot-separated labels of 1 to 63 letters, digits,
// hyphens and underscores.
func validDNSName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range []byte(label) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// randomSerial returns a random positive serial number of up to 128 bits.
func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("proxy: generating a serial number: %w", err)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

// subjectKeyID is the SHA-256 of the public key's bits truncated to 160
// bits (RFC 7093, section 2, method 1).
func subjectKeyID(pub *ecdsa.PublicKey) ([]byte, error) {
	k, err := pub.ECDH()
	if err != nil {
		return nil, fmt.Errorf("proxy: encoding the CA public key: %w", err)
	}
	sum := sha256.Sum256(k.Bytes())
	return sum[:20], nil
}
