package main

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/governor"
	"github.com/vigilhq/vigil/proxy"
)

func TestBuildProxy(t *testing.T) {
	caDir := filepath.Join(t.TempDir(), "ca")
	ca, err := proxy.InitCA(caDir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	goodPEM := filepath.Join(dir, "upstream.pem")
	if err := os.WriteFile(goodPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	badPEM := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(badPEM, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		caDir   string
		caFile  string
		wantErr string
	}{
		{"defaults", "", "", ""},
		{"interception CA and upstream CAs", caDir, goodPEM, ""},
		{"missing CA directory", filepath.Join(dir, "nope"), "", "proxy.ca_dir"},
		{"missing upstream CA file", "", filepath.Join(dir, "nope.pem"), "proxy.upstream_ca_file"},
		{"upstream CA file without a certificate", "", badPEM, "no PEM certificate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultConfig()
			cfg.Proxy.CADir, cfg.Proxy.UpstreamCAFile = tc.caDir, tc.caFile
			engine, err := governor.New(governor.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			_, err = buildProxy(cfg, proxyDeps{engine: engine})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got %v, want a proxy", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error mentioning %q", err, tc.wantErr)
			}
		})
	}
}
