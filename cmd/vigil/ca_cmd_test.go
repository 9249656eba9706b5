package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/proxy"
)

func TestCAInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	code, out, errs := runCLI(t, nil, "ca", "init", "--out", dir)
	if code != 0 {
		t.Fatalf("exit: got %d, want 0 (stderr %q)", code, errs)
	}
	if errs != "" {
		t.Errorf("stderr: got %q, want nothing", errs)
	}
	certPath, keyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{certPath, 0o644},
		{keyPath, 0o600},
	} {
		fi, err := os.Stat(f.path)
		if err != nil {
			t.Fatalf("Stat: %v", err)
		}
		if got := fi.Mode().Perm(); got != f.mode {
			t.Errorf("mode of %s: got %04o, want %04o", f.path, got, f.mode)
		}
	}
	ca, err := proxy.LoadCA(dir)
	if err != nil {
		t.Fatalf("LoadCA of the new CA: %v", err)
	}
	sum := sha256.Sum256(ca.Certificate().Raw)
	wantFP := strings.ToUpper(fmt.Sprintf("%x", sum[:1])) + ":"
	for _, want := range []string{certPath, keyPath, "sha256       " + wantFP, "SSL_CERT_FILE=" + certPath, "update-ca-certificates", "    ca_dir: " + dir} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout: got %q, want it to contain %q", out, want)
		}
	}
	if got := fingerprint(ca.Certificate().Raw); len(got) != 32*3-1 || !strings.HasPrefix(got, wantFP) {
		t.Errorf("fingerprint: got %q, want 32 colon-separated hex bytes starting %s", got, wantFP)
	}

	before, _ := os.ReadFile(keyPath)
	code, out, errs = runCLI(t, nil, "ca", "init", "--out", dir)
	if code != 1 {
		t.Errorf("second init: exit got %d, want 1", code)
	}
	if !strings.Contains(errs, "already exists") || !strings.Contains(errs, "never replaced") {
		t.Errorf("second init: stderr got %q, want it to say the CA already exists and is never replaced", errs)
	}
	if out != "" {
		t.Errorf("second init: stdout got %q, want nothing", out)
	}
	if after, _ := os.ReadFile(keyPath); string(after) != string(before) {
		t.Errorf("second init: ca.key changed, want it untouched")
	}
}

func TestCAUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"no command", nil, 2, "Usage: vigil ca"},
		{"unknown command", []string{"frob"}, 2, `unknown command "frob"`},
		{"missing out", []string{"init"}, 2, "--out DIR is required"},
		{"empty out", []string{"init", "--out="}, 2, "--out DIR is required"},
		{"extra argument", []string{"init", "--out", dir, "extra"}, 2, `want no arguments, got ["extra"]`},
		{"unknown flag", []string{"init", "--out", dir, "--force"}, 2, "flag provided but not defined"},
		{"out not a directory", []string{"init", "--out", filepath.Join(dir, "file")}, 1, "vigil ca init:"},
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, nil, append([]string{"ca"}, tt.args...)...)
			if code != tt.wantCode {
				t.Errorf("exit: got %d, want %d (stderr %q)", code, tt.wantCode, errs)
			}
			if !strings.Contains(errs, tt.wantStderr) {
				t.Errorf("stderr: got %q, want it to contain %q", errs, tt.wantStderr)
			}
			if out != "" {
				t.Errorf("stdout: got %q, want nothing", out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "ca.key")); !os.IsNotExist(err) {
		t.Errorf("after usage errors: ca.key got %v, want it not created", err)
	}
}

func TestCAHelp(t *testing.T) {
	tests := []struct {
		name string
		args []string
		out  func(stdout, stderr string) string
		want string
	}{
		{"ca help", []string{"ca", "help"}, func(o, _ string) string { return o }, "init --out DIR"},
		{"init -h", []string{"ca", "init", "-h"}, func(_, e string) string { return e }, "Usage: vigil ca init --out DIR"},
		{"vigil help", []string{"help"}, func(o, _ string) string { return o }, "vigil ca help"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, nil, tt.args...)
			if got := tt.out(out, errs); code != 0 || !strings.Contains(got, tt.want) {
				t.Errorf("got exit %d and %q, want 0 and %q", code, got, tt.want)
			}
		})
	}
}
