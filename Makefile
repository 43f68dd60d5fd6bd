# sessionstore — build, test and maintenance targets.
# `make test` is what CI runs (via .ci/run) on a clean clone.

GO       ?= go
PKGS     ?= ./...
FUZZTIME ?= 2m
BENCHTIME ?= 2s

# golangci-lint v2, pinned; installed through the Go toolchain (module proxy)
# into GOBIN, or the first GOPATH's bin, and kept out of go.mod.
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT ?= $(or $(shell $(GO) env GOBIN),$(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin)/golangci-lint

.PHONY: all test fmt-check vet test-race lint lint-install demo bench bench-quick bench-go soak fuzz mutate-sync

all: test

## test: gofmt check, vet (linux and darwin), race tests
test: fmt-check vet test-race

fmt-check:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt: unformatted files:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	GOOS=darwin $(GO) vet $(PKGS)

test-race:
	$(GO) test -race -count=1 $(PKGS)

## lint: golangci-lint (config: .golangci.yml) over every package, tests included; linux and darwin, as vet
lint: lint-install
	$(GOLANGCI_LINT) run $(PKGS)
	GOOS=darwin $(GOLANGCI_LINT) run $(PKGS)

## lint-install: install golangci-lint $(GOLANGCI_LINT_VERSION) unless that version is there
lint-install:
	@if ! "$(GOLANGCI_LINT)" version 2>/dev/null | grep -q 'has version $(GOLANGCI_LINT_VERSION:v%=%) '; then \
		echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) to $(GOLANGCI_LINT)"; \
		$(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION); \
	fi

## demo: the demo workload on the default store ($$SESSIONSTORE_DIR or the XDG data dir)
demo:
	$(GO) run ./cmd/sessions demo

## bench: the comparison harness (bench/, its own module): every workload against
## jsonlstore, raw append, SQLite and bbolt in one run; BENCH_FLAGS adds flags
## (e.g. BENCH_FLAGS='-only W1,W3 -out /tmp/bench.md')
bench:
	cd bench && $(GO) run . $(BENCH_FLAGS)

## bench-quick: the harness with small counts (under two minutes once built)
bench-quick:
	cd bench && $(GO) run . -quick $(BENCH_FLAGS)

## bench-go: the store's go test benchmarks (append vs raw fdatasync, load latest, list, compaction)
bench-go:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./jsonlstore/

## fuzz: every fuzz target for FUZZTIME each
fuzz:
	@set -e; for spec in \
		./sessnap:FuzzUnmarshal ./sessnap:FuzzRoundTrip ./session:FuzzNormalizeLastError \
		./jsonlstore:FuzzParseLine ./fslease:FuzzParseRecord; do \
		pkg=$${spec%%:*}; fn=$${spec##*:}; \
		echo "== $$fn ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

## mutate-sync: disable each sync call in turn; some power-loss test must notice
mutate-sync:
	JSONLSTORE_MUTATE_SYNC=1 $(GO) test -count=1 -run 'TestSyncMutation|TestCompactSyncMutation' -v ./jsonlstore/

## soak: long kill, contention and power-loss runs, then the fuzzers
soak:
	JSONLSTORE_KILL_ROUNDS=5000 $(GO) test -count=1 -timeout 3h -run 'TestKillDuringAppend' ./jsonlstore/
	FSLEASE_SOAK_ROUNDS=10000 $(GO) test -count=1 -timeout 1h -run 'TestContention' ./fslease/
	JSONLSTORE_POWERLOSS_SEEDS=2000 $(GO) test -count=1 -timeout 1h -run 'TestPowerLoss' ./jsonlstore/
	JSONLSTORE_COMPACT_KILL_ROUNDS=500 $(GO) test -count=1 -timeout 1h -run 'TestCompactKilled' ./jsonlstore/
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME)
	@echo "soak: all passed"
