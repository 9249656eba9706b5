package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/vigilhq/vigil/proxy"
)

const caUsage = `Usage: vigil ca <command> [flags]

Manage the certificate authority with which the proxy intercepts HTTPS
(proxy.ca_dir in the configuration). Offline: no server is involved.

  init --out DIR    create a new CA: DIR/ca.crt (certificate, PEM) and
                    DIR/ca.key (ECDSA P-256 private key, PEM PKCS #8, mode
                    0600), creating DIR (mode 0700) if needed; an existing
                    ca.crt or ca.key is never overwritten

It prints the two paths, the certificate's SHA-256 fingerprint and how to
make clients trust it.

Exit status: 0 success, 1 the CA could not be written (for instance it
already exists), 2 a usage error.
`

// caMain runs `vigil ca ...` and returns the exit status.
func caMain(args []string, stdout, stderr io.Writer) int {
	_, flags, status, ok := subcommand("ca", caUsage, map[string]string{
		"init": "init --out DIR",
	}, args, stdout, stderr)
	if !ok {
		return status
	}
	var out string
	flags.StringVar(&out, "out", "", "create the CA in `DIR` (required)")
	pos, _, status, ok := parseArgs(flags, args[1:])
	if !ok {
		return status
	}
	usage := func(err error) int {
		fmt.Fprintf(stderr, "vigil ca init: %v\n", err)
		flags.Usage()
		return exitUsage
	}
	switch {
	case len(pos) != 0:
		return usage(fmt.Errorf("want no arguments, got %q", pos))
	case out == "":
		return usage(errors.New("--out DIR is required"))
	}
	return caInit(out, stdout, stderr)
}

// caInit creates the CA in dir and tells the user how to use it.
func caInit(dir string, stdout, stderr io.Writer) int {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	ca, err := proxy.InitCA(dir, time.Now())
	if errors.Is(err, fs.ErrExist) {
		fmt.Fprintf(stderr, "vigil ca init: %v\n"+
			"An existing CA is never replaced: choose another --out, or remove %s and %s first\n"+
			"(clients that trust the old certificate must then be given the new one).\n",
			err, filepath.Join(dir, proxy.CACertFile), filepath.Join(dir, proxy.CAKeyFile))
		return exitFail
	}
	if err != nil {
		fmt.Fprintf(stderr, "vigil ca init: %v\n", err)
		return exitFail
	}
	cert := ca.Certificate()
	certPath, keyPath := filepath.Join(dir, proxy.CACertFile), filepath.Join(dir, proxy.CAKeyFile)
	fmt.Fprintf(stdout, `certificate  %s
private key  %s (mode 0600: keep it secret; whoever holds it can
             intercept the HTTPS of every client that trusts the certificate)
sha256       %s
valid until  %s

Point Vigil at it in its configuration:
  proxy:
    ca_dir: %s
and make the agents trust the certificate, for instance in their environment:
  SSL_CERT_FILE=%s        OpenSSL, curl, Go (replaces the system roots)
  NODE_EXTRA_CA_CERTS=%s  Node.js (adds to its roots)
  REQUESTS_CA_BUNDLE=%s   Python requests
or system-wide (Debian, Ubuntu):
  sudo cp %s /usr/local/share/ca-certificates/vigil-ca.crt
  sudo update-ca-certificates
`, certPath, keyPath, fingerprint(cert.Raw), cert.NotAfter.UTC().Format(time.RFC3339),
		dir, certPath, certPath, certPath, certPath)
	return exitOK
}

// fingerprint is the SHA-256 of der as colon-separated upper-case hex, as
// `openssl x509 -noout -fingerprint -sha256` prints it.
func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	hex := make([]string, len(sum))
	for i, b := range sum {
		hex[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(hex, ":")
}
