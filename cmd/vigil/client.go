package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vigilhq/vigil/admin/wire"
)

// Client commands (vigil ledger ..., and later control, approvals, ...) talk
// to a running server's admin API through apiClient. Their exit statuses:
// 0 success, 1 the server refused or could not be reached (or, for verify,
// the chain is broken), 2 a usage error.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// defaultServer is the admin API a client command talks to when neither
// --server nor VIGIL_SERVER says otherwise.
const defaultServer = "http://127.0.0.1:8420"

// defaultClientTimeout bounds one request of a client command.
const defaultClientTimeout = 30 * time.Second

// clientFlags are the flags every client command accepts.
type clientFlags struct {
	server  string
	apiKey  string
	timeout time.Duration
}

func (f *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", "", "admin API base `URL` (default $VIGIL_SERVER, else "+defaultServer+")")
	fs.StringVar(&f.apiKey, "api-key", "", "API `key` sent as X-Api-Key (default $VIGIL_API_KEY)")
	fs.DurationVar(&f.timeout, "timeout", defaultClientTimeout, "how long to wait for the server (for export: for the response to start)")
}

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// client builds the API client from the flags and the environment.
func (f *clientFlags) client(getenv func(string) string) (*apiClient, error) {
	env := func(k string) string {
		if getenv == nil {
			return ""
		}
		return getenv(k)
	}
	server := f.server
	if server == "" {
		server = env("VIGIL_SERVER")
	}
	if server == "" {
		server = defaultServer
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, usagef("--server: %q is not an http(s) base URL such as %s", server, defaultServer)
	}
	if u.User != nil {
		return nil, usagef("--server: credentials in the URL are not used; pass --api-key or VIGIL_API_KEY")
	}
	if f.timeout <= 0 {
		return nil, usagef("--timeout: must be positive, got %s", f.timeout)
	}
	key := f.apiKey
	if key == "" {
		key = env("VIGIL_API_KEY")
	}
	return &apiClient{
		base:    strings.TrimSuffix(u.String(), "/"),
		apiKey:  key,
		timeout: f.timeout,
		http: &http.Client{Transport: &http.Transport{
			Proxy:                 nil, // the admin API is reached directly, never through HTTP_PROXY (Vigil's own proxy)
			DialContext:           (&net.Dialer{Timeout: f.timeout}).DialContext,
			TLSHandshakeTimeout:   f.timeout,
			ResponseHeaderTimeout: f.timeout,
			ForceAttemptHTTP2:     true,
		}},
	}, nil
}

// apiClient is a small client of the admin API.
type apiClient struct {
	base    string // without a trailing slash
	apiKey  string
	timeout time.Duration
	http    *http.Client
}

// apiError is an error envelope the server answered with.
type apiError struct {
	Status  int
	Code    string
	Message string
	Field   string
}

// Error reads "<code>: <message>", with the field when the server named one.
func (e *apiError) Error() string {
	s := e.Code + ": " + e.Message
	if e.Field != "" {
		s += " (field " + e.Field + ")"
	}
	return s
}

// open sends GET base+path?query and returns the response of a 2xx answer;
// any other answer becomes an *apiError. The caller closes the body.
func (c *apiClient) open(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	if c.apiKey != "" {
		req.Header.Set("X-Api-Key", c.apiKey)
	}
	req.Header.Set("User-Agent", "vigil/"+version)
	res, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said once, below
		}
		return nil, fmt.Errorf("cannot reach %s: %w", c.base, err)
	}
	if res.StatusCode/100 == 2 {
		return res, nil
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return nil, decodeAPIError(res.StatusCode, body)
}

// decodeAPIError reads the error envelope of a failed answer; a body that
// is not one (a proxy's page, say) gives the HTTP status instead.
func decodeAPIError(status int, body []byte) error {
	var env wire.ErrorResponse
	if err := json.Unmarshal(body, &env); err != nil || env.Error.Code == "" {
		return &apiError{Status: status, Code: "http_" + fmt.Sprint(status), Message: strings.TrimSpace(http.StatusText(status) + " (not an API error envelope)")}
	}
	e := &apiError{Status: status, Code: env.Error.Code, Message: env.Error.Message}
	if f, ok := env.Error.Details["field"].(string); ok {
		e.Field = f
	}
	return e
}

// getBytes sends GET and returns the whole body, within the timeout.
func (c *apiClient) getBytes(ctx context.Context, path string, query url.Values) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.open(ctx, path, query)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", path, err)
	}
	return b, nil
}

// stream sends GET and copies the body to w as it arrives. Only the wait for
// the response is bounded by the timeout, not the transfer. A body cut
// short by the server is an error.
func (c *apiClient) stream(ctx context.Context, path string, w io.Writer) (int64, error) {
	res, err := c.open(ctx, path, nil)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	n, err := io.Copy(w, res.Body)
	if err != nil {
		return n, fmt.Errorf("the transfer stopped after %d bytes (the output is incomplete): %w", n, err)
	}
	return n, nil
}

// reportError prints err as "vigil: ..." and returns its exit status.
func reportError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "vigil: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFail
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments, which it returns in order. "--" ends the flags.
// parseArgs parses a subcommand's arguments (flags anywhere among them) and
// returns the positional ones and the names of the flags given. When ok is
// false the command ends with status: 0 after -h, 2 after a bad flag (the
// flag package has said why).
func parseArgs(fs *flag.FlagSet, args []string) (pos []string, set map[string]bool, status int, ok bool) {
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, nil, exitOK, false
	}
	if err != nil {
		return nil, nil, exitUsage, false
	}
	set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return pos, set, 0, true
}

func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// subcommand resolves `vigil GROUP CMD ...`: with no command it prints the
// group's usage (exit 2), answers help (exit 0) and unknown commands (exit
// 2); for a known command it returns a flag set whose usage shows the
// command's synopsis. When ok is false the caller returns status.
func subcommand(group, usage string, synopses map[string]string, args []string, stdout, stderr io.Writer) (cmd string, fs *flag.FlagSet, status int, ok bool) {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return "", nil, exitUsage, false
	}
	cmd = args[0]
	synopsis, known := synopses[cmd]
	switch {
	case cmd == "help" || cmd == "-h" || cmd == "-help" || cmd == "--help":
		fmt.Fprint(stdout, usage)
		return cmd, nil, exitOK, false
	case !known:
		fmt.Fprintf(stderr, "vigil %s: unknown command %q\n\n%s", group, cmd, usage)
		return cmd, nil, exitUsage, false
	}
	fs = flag.NewFlagSet("vigil "+group+" "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: vigil %s %s\n\nFlags (before or after the arguments):\n", group, synopsis)
		fs.PrintDefaults()
	}
	return cmd, fs, 0, true
}
