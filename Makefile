# Vigil: the two commands a newcomer needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/vigil
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
CONFIG  ?= examples/quickstart.yaml

.PHONY: build run test test-short bench bench-proxy lint fuzz clean

## build: compile bin/vigil
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/vigil

## run: build and start `vigil serve` on the embedded default with the quickstart configuration
run: build
	./$(BIN) serve --config $(CONFIG)

## test: vet, then every test with the race detector (what CI runs)
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 10m ./...

## test-short: the quick loop while editing (no race detector, skips slow tests)
test-short:
	$(GO) test -short ./...

## bench: the governor benchmarks, 6 runs each (compare medians; see BENCHMARKS.md)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 -cpu 1,2 ./governor

## bench-proxy: the forward proxy's load benchmark against direct calls and plain goproxy (~3.5 min; see BENCHMARKS.md)
BENCH_PROXY_FLAGS ?=
bench-proxy:
	$(GO) run ./test/load $(BENCH_PROXY_FLAGS)

## lint: gofmt, go vet and staticcheck (a Go tool dependency in go.mod)
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

## fuzz: run each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
FUZZ_TARGETS := \
	FuzzEvaluate:./governor \
	FuzzParseStrategy:./governor/trajectory \
	FuzzParseConfig:./cmd/vigil \
	FuzzParse:./proxy/toolcall \
	FuzzFilterToolsList:./proxy/toolcall \
	FuzzProxyRequest:./proxy \
	FuzzCanonicalize:./ledger \
	FuzzCanonEncoder:./ledger \
	FuzzNarrative:./ledger \
	FuzzTopLevelValueFromEnd:./ledger \
	FuzzVerifyStream:./ledger \
	FuzzDecodeEvaluate:./admin \
	FuzzDecodeDirective:./admin
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		name=$${t%%:*}; pkg=$${t#*:}; \
		echo "== $$name ($$pkg)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

clean:
	rm -rf bin
