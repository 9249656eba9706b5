//go:build !linux

package main

import "time"

// sleepUntil sleeps until t (Go timers: up to about a millisecond late).
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }
