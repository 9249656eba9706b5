// Package redistest starts throwaway redis-server processes for tests.
//
// Its one noun is Server: Start launches a real redis-server (found on
// PATH) bound to 127.0.0.1 on a free port, with persistence off and a
// temporary working directory, waits until it answers PING, and registers
// a cleanup that kills it. Every test gets its own server, so tests never
// touch a shared Redis (in particular not the one on 127.0.0.1:6379).
//
// Without a redis-server binary, Start skips the test, unless the CI
// environment variable is set: then it fails, so that a CI run cannot pass
// by silently skipping every Redis test.
//
// Stop and Restart take the server down and bring it back on the same
// port, for outage tests. Stop saves a snapshot first (SHUTDOWN SAVE) and
// Restart loads it, so the data survives the outage as it would on a
// persistent production Redis.
//
// The package imports nothing of Vigil's; it is usable from any package's
// tests.
package redistest
