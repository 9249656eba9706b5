package main

import (
	"os"
	"testing"
)

func FuzzParseConfig(f *testing.F) {
	quickstart, err := os.ReadFile(quickstartPath)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(quickstart),
		"",
		"version: 1\n",
		"version: 2\n",
		"scoop: 1\n",
		agent + "    scoop: [read]\n",
		"proxy: {hold_timeout_seconds: x, default_agent: a1}\n" + agent,
		"api_keys:\n  - {key: k, principal: p, role: admin}\n  - {key: k, principal: q, role: viewer}\n",
		agent + "    archetype: finacial-analyst\n    authority: [\"action.parameters.amount <=\"]\n",
		agent + "    time_windows:\n      deploy: {start_hour: 9, end_hour: 17, timezone: Europe/Paris}\n",
		"routes:\n  - {match: {host: h, method: delete, path: \"/a/*\"}, action: a, reversibility: compensable, modify: {set_headers: {X-A: b}}}\n",
		"rules:\n  - {name: r1, expr: \"action.type != 'export'\"}\n",
		"server: {port: 8420, redis_url: \"rediss://:pw@host:6380/1\"}\n",
		"base: &b {id: a1, token: t}\nagents: [*b, *b]\n",
		"agents:\n  - <<: {id: a1}\n    token: t\n",
		"x: 1\nx: 2\n---\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConfig(data)
		if err != nil {
			if c != nil {
				t.Errorf("got a config and the error %v, want one of them", err)
			}
			return
		}
		if err := c.validate(); err != nil {
			t.Fatalf("parseConfig accepted a config that validate refuses: %v", err)
		}
		// Normalizing twice changes nothing.
		c.applyDefaults()
		if err := c.validate(); err != nil {
			t.Fatalf("validate after applyDefaults: %v", err)
		}
		_ = c.contracts()
		_ = c.rules()
		_ = c.agentTokens()
	})
}
