// Package test holds Vigil's cross-package tests: the architecture rules of
// shared/design/ARCHITECTURE.md, and (as the product grows) end-to-end tests
// over real processes and the load harness in test/load.
package test
