package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is stamped at build time (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

const usage = `Usage: vigil <command> [flags]

Commands:
  serve     start Vigil (admin API on --port; see 'vigil serve -h')
  control   issue, list and expire directives (see 'vigil control help')
  approvals list, approve and deny held actions (see 'vigil approvals help')
  trajectory drift risk, policies and what-ifs (see 'vigil trajectory help')
  ledger    read, verify and export the behaviour ledger (see 'vigil ledger help')
  ca        create the HTTPS interception CA (see 'vigil ca help')
  version   print the version

See README.md and GET /v1/openapi.json for the API.
`

// run executes one command and returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr, getenv)
	case "control":
		return controlMain(ctx, args[1:], stdout, stderr, getenv)
	case "approvals":
		return approvalsMain(ctx, args[1:], stdout, stderr, getenv)
	case "trajectory":
		return trajectoryMain(ctx, args[1:], stdout, stderr, getenv)
	case "ledger":
		return ledgerMain(ctx, args[1:], stdout, stderr, getenv)
	case "ca":
		return caMain(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "vigil %s\n", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "vigil: unknown command %q\n\n%s", args[0], usage)
	return 2
}
