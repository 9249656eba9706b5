package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// proc is a child process under test.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string // its stderr (and stdout, for vigil)
	exited  chan struct{}
	waitErr error

	idleRSS atomic.Int64 // KiB, sampled before any load
	peakRSS atomic.Int64 // KiB, the highest VmRSS sampled
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// start starts cmd as p, its stderr (and its stdout, unless set) in
// p.logPath.
func (p *proc) start() error {
	f, err := os.Create(p.logPath)
	if err != nil {
		return err
	}
	defer f.Close() // the child has its own descriptor once started
	p.cmd.Stderr = f
	if p.cmd.Stdout == nil {
		p.cmd.Stdout = f
	}
	p.cmd.SysProcAttr = childAttr()
	p.cmd.Env = append(os.Environ(), "HTTP_PROXY=", "HTTPS_PROXY=", "http_proxy=", "https_proxy=")
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.exited = make(chan struct{})
	go func() { p.waitErr = p.cmd.Wait(); close(p.exited) }()
	return nil
}

// alive reports an error if p has exited.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %v (log: %s)", p.name, p.waitErr, p.logPath)
	default:
		return nil
	}
}

// stop ends p: SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p.exited == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// startRole starts this program as role (upstream, goproxy) on a free
// loopback port and returns its address once it listens.
func startRole(role, dir string) (*proc, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	p := &proc{name: role, cmd: exec.Command(exe, "-role", role, "-addr", "127.0.0.1:0"),
		logPath: filepath.Join(dir, role+".log")}
	// Its stdout is a pipe of ours (not StdoutPipe, which Wait would close
	// under the reader).
	r, w, err := os.Pipe()
	if err != nil {
		return nil, "", err
	}
	p.cmd.Stdout = w
	err = p.start()
	_ = w.Close()
	if err != nil {
		_ = r.Close()
		return nil, "", err
	}
	line := make(chan string, 1)
	go func() {
		defer r.Close()
		sc := bufio.NewScanner(r)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case l := <-line:
		if addr, ok := strings.CutPrefix(l, "listening "); ok {
			return p, addr, nil
		}
		p.stop(time.Second)
		return nil, "", fmt.Errorf("%s: unexpected first line %q (log: %s)", role, l, p.logPath)
	case <-time.After(20 * time.Second):
		p.stop(time.Second)
		return nil, "", fmt.Errorf("%s did not start in 20 s (log: %s)", role, p.logPath)
	}
}

// vigilSetup is one vigil serve process's configuration.
type vigilSetup struct {
	name       string // target name: vigil, vigil-process, vigil-noledger
	durability string // sync or process
	ledger     bool
}

// vigilProc is a running vigil serve.
type vigilProc struct {
	*proc
	setup    vigilSetup
	admin    string // host:port of the admin API
	proxy    string // host:port of the forward proxy
	dataDir  string
	confPath string
}

// Agent credentials and the admin key of the benchmark's configuration.
const (
	agentID    = "load-bot"
	agentToken = "load-bot-token-7f3a9c"
	apiKey     = "k-load-viewer-51d2"
)

// vigilConfig is the configuration of the benchmark: one agent with a
// realistic contract (scope, boundaries, a sensitive target, a CEL
// authority, limits that never throttle, an anchor), one constitutional
// rule, the ledger in the durability asked, every subsystem on.
const vigilConfig = `version: 1
runtime:
  enable_control_plane: true
  enable_ledger: %t
  enable_optimizer: true
server:
  host: 127.0.0.1
  port: %d
  proxy_host: 127.0.0.1
  proxy_port: %d
  data_dir: %q
  playground: false
ledger:
  durability: %s
api_keys:
  - {key: %q, principal: "load@example.com", role: viewer}
proxy:
  hold_timeout_seconds: 30
agents:
  - id: %s
    token: %q
    archetype: data-processing
    team: load
    scope: [read, create]
    boundaries: ["127.0.0.1:*/*"]
    human_override: [delete]
    sensitive_targets: ["127.0.0.1:*/payments/*"]
    authority:
      - "!has(action.parameters.qty) || action.parameters.qty <= 1000"
    limits: {actions_per_minute: 0, max_concurrent: 0, max_cost_per_action: 100}
    anchors:
      create: "add a new catalogue item from a supplier feed"
rules:
  - name: no-bulk-export
    expr: "action.type != 'export' || action.parameters.rows <= 1000"
    message: "bulk export needs a human"
`

// startVigil writes the configuration of s and starts vigil serve with it on
// free ports; it returns once /v1/health answers 200.
func startVigil(bin, dir string, s vigilSetup) (*vigilProc, error) {
	vdir := filepath.Join(dir, s.name)
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return nil, err
	}
	adminPort, err := freePort()
	if err != nil {
		return nil, err
	}
	proxyPort, err := freePort()
	if err != nil {
		return nil, err
	}
	v := &vigilProc{setup: s, admin: "127.0.0.1:" + strconv.Itoa(adminPort), proxy: "127.0.0.1:" + strconv.Itoa(proxyPort),
		dataDir: filepath.Join(vdir, "data"), confPath: filepath.Join(vdir, "vigil.yaml")}
	conf := fmt.Sprintf(vigilConfig, s.ledger, adminPort, proxyPort, v.dataDir, s.durability, apiKey, agentID, agentToken)
	if err := os.WriteFile(v.confPath, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	v.proc = &proc{name: s.name, cmd: exec.Command(bin, "serve", "--config", v.confPath),
		logPath: filepath.Join(vdir, "vigil.log")}
	if err := v.start(); err != nil {
		return nil, err
	}
	if err := v.waitHealthy(30 * time.Second); err != nil {
		v.stop(5 * time.Second)
		return nil, err
	}
	return v, nil
}

func (v *vigilProc) waitHealthy(timeout time.Duration) error {
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := v.alive(); err != nil {
			return err
		}
		resp, err := c.Get("http://" + v.admin + "/v1/health")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s: /v1/health did not answer 200 within %s (log: %s)", v.name, timeout, v.logPath)
}

// freePort returns a loopback TCP port free at the time of the call.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// buildVigil builds ./cmd/vigil of the module the program runs in into dir.
func buildVigil(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the vigil module: run from the repository, or pass -vigil")
	}
	bin := filepath.Join(dir, "bin", "vigil")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/vigil")
	cmd.Dir = filepath.Dir(gomod)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/vigil: %w\n%s", err, stderr.String())
	}
	return bin, nil
}

// procStatus returns the VmRSS and VmHWM of pid, in KiB.
func procStatus(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if k == "VmRSS" {
			rss = n
		} else {
			hwm = n
		}
	}
	return rss, hwm, nil
}

// watchMemory samples the VmRSS of procs every interval until ctx ends and
// keeps each one's peak.
func watchMemory(ctx context.Context, procs []*proc, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for _, p := range procs {
			if rss, _, err := procStatus(p.pid()); err == nil && rss > p.peakRSS.Load() {
				p.peakRSS.Store(rss)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// procCPU returns the CPU time (user + system, all threads) pid has used.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from its ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/PID/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 { // fields 3.. : utime is field 14, stime 15
		return 0, errors.New("short /proc/PID/stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * clockTick, nil
}

// machineCPU is the machine's idle (idle + iowait) and steal time so far,
// over every CPU (/proc/stat). Busy time is derived from them: its user and
// system columns are sampled at the tick and miss the short bursts of an
// I/O-bound load, while idle time is measured exactly when a CPU leaves it.
type machineCPU struct{ idle, steal time.Duration }

func readMachineCPU() machineCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		return machineCPU{}
	}
	tick := func(i int) time.Duration {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		return time.Duration(n) * clockTick
	}
	return machineCPU{idle: tick(4) + tick(5), steal: tick(8)}
}
