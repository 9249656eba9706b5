package main

import (
	"errors"
	"flag"
	"fmt"
)

// serveSettings are the settings of `vigil serve` that can come from a flag,
// the file's `server` section or (for the Redis URL) the environment.
type serveSettings struct {
	Host       string
	Port       int
	ProxyHost  string
	ProxyPort  int
	DataDir    string
	RedisURL   string
	UI         bool
	Metrics    bool
	Playground bool
	SimMode    bool
}

// defaultServeSettings returns the defaults of API.md section 1.
func defaultServeSettings() serveSettings {
	return serveSettings{
		Host:      "0.0.0.0",
		Port:      8420,
		ProxyHost: "127.0.0.1",
		ProxyPort: 8421,
		DataDir:   "./vigil-data",
	}
}

// registerFlags defines the serve flags on fs, bound to s, with s's current
// values as defaults. serveSettings relies on these flag names.
func (s *serveSettings) registerFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.Host, "host", s.Host, "admin API listen `host`")
	fs.IntVar(&s.Port, "port", s.Port, "admin API `port`")
	fs.StringVar(&s.ProxyHost, "proxy-host", s.ProxyHost, "forward-proxy listen `host` (a sidecar shares the agent's network namespace; widen it deliberately)")
	fs.IntVar(&s.ProxyPort, "proxy-port", s.ProxyPort, "forward-proxy `port` for agents")
	fs.StringVar(&s.DataDir, "data-dir", s.DataDir, "embedded store `dir`ectory")
	fs.StringVar(&s.RedisURL, "redis-url", s.RedisURL, "shared Redis `URL` (redis://host:port/db); also VIGIL_REDIS_URL")
	fs.BoolVar(&s.UI, "ui", s.UI, "serve the dashboard at /ui/ on the admin port")
	fs.BoolVar(&s.Metrics, "metrics", s.Metrics, "serve Prometheus metrics at /metrics on the admin port")
	fs.BoolVar(&s.Playground, "playground", s.Playground, "enable /v1/playground/* (dry-run evaluation)")
	fs.BoolVar(&s.SimMode, "sim-mode", s.SimMode, "run the built-in fleet simulator")
}

// serveSettings merges the settings in effect, by precedence: a flag given on
// the command line (fs.Visit), then for the Redis URL the environment
// variable VIGIL_REDIS_URL (getenv may be nil), then the file's server
// section, then the flag's value (its default). flags holds the parsed flag
// values; fs must have been parsed. Validate the result with
// serveSettings.validate.
func (c *fileConfig) serveSettings(fs *flag.FlagSet, flags serveSettings, getenv func(string) string) serveSettings {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	s, f := flags, c.Server
	if !set["host"] && f.Host != "" {
		s.Host = f.Host
	}
	if !set["port"] && f.Port != nil {
		s.Port = *f.Port
	}
	if !set["proxy-host"] && f.ProxyHost != "" {
		s.ProxyHost = f.ProxyHost
	}
	if !set["proxy-port"] && f.ProxyPort != nil {
		s.ProxyPort = *f.ProxyPort
	}
	if !set["data-dir"] && f.DataDir != "" {
		s.DataDir = f.DataDir
	}
	if !set["redis-url"] {
		env := ""
		if getenv != nil {
			env = getenv("VIGIL_REDIS_URL")
		}
		switch {
		case env != "":
			s.RedisURL = env
		case f.RedisURL != "":
			s.RedisURL = f.RedisURL
		}
	}
	if !set["ui"] && f.UI {
		s.UI = true
	}
	if !set["metrics"] && f.Metrics {
		s.Metrics = true
	}
	if !set["playground"] && f.Playground {
		s.Playground = true
	}
	if !set["sim-mode"] && f.SimMode {
		s.SimMode = true
	}
	return s
}

// validate checks the merged settings: a flag or VIGIL_REDIS_URL is not seen
// by fileConfig.validate.
func (s serveSettings) validate() error {
	var errs []error
	if msg := checkPort(s.Port); msg != "" {
		errs = append(errs, fmt.Errorf("serve: port: %s", msg))
	}
	if msg := checkPort(s.ProxyPort); msg != "" {
		errs = append(errs, fmt.Errorf("serve: proxy port: %s", msg))
	}
	if s.RedisURL != "" {
		if msg := checkRedisURL(s.RedisURL); msg != "" {
			errs = append(errs, fmt.Errorf("serve: redis URL: %s", msg))
		}
	}
	return errors.Join(errs...)
}
