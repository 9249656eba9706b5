package main

import "syscall"

// childAttr makes a child die with the load program (a benchmark interrupted
// hard leaves no server behind).
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
