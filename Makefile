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

.PHONY: seeds all test fmt-check vet test-race test-python test-typescript test-mcp lint lint-install demo bench bench-quick bench-go soak fuzz mutate-sync

all: test

## test: gofmt check, vet (linux and darwin), race tests, the clients' tests
test: fmt-check vet test-race test-python test-typescript test-mcp

fmt-check:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt: unformatted files:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	GOOS=darwin $(GO) vet $(PKGS)

test-race:
	$(GO) test -race -count=1 -timeout 60m $(PKGS)

## test-python: the Python client's tests (clients/python, standard library
## only) against a `sessions serve` built from this tree; python3 is required
test-python:
	@command -v python3 >/dev/null 2>&1 || { echo "test-python: python3 is required (.ci/run installs it)" >&2; exit 1; }
	@bin=$$(mktemp -d) && trap 'rm -rf "$$bin"' EXIT && \
	$(GO) build -o "$$bin/sessions" ./cmd/sessions && \
	cd clients/python && SESSIONS_BIN="$$bin/sessions" python3 -m unittest -v

## test-typescript: the TypeScript client's tests (clients/typescript), with
## the real @openai/agents from npm (npm ci, pinned by package-lock.json) and
## a local fake model; node (20 or later) and npm are required
test-typescript:
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { echo "test-typescript: node and npm are required (.ci/run installs them)" >&2; exit 1; }
	@bin=$$(mktemp -d) && trap 'rm -rf "$$bin"' EXIT && \
	$(GO) build -o "$$bin/sessions" ./cmd/sessions && \
	cd clients/typescript && npm ci --no-audit --no-fund && SESSIONS_BIN="$$bin/sessions" npm test

## test-mcp: `sessions mcp` tested with the official TypeScript MCP client
## (clients/mcp: @modelcontextprotocol/sdk from npm, pinned by
## package-lock.json) over stdio; node (20 or later) and npm are required
test-mcp:
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { echo "test-mcp: node and npm are required (.ci/run installs them)" >&2; exit 1; }
	@bin=$$(mktemp -d) && trap 'rm -rf "$$bin"' EXIT && \
	$(GO) build -o "$$bin/sessions" ./cmd/sessions && \
	cd clients/mcp && npm ci --no-audit --no-fund && SESSIONS_BIN="$$bin/sessions" npm test

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
## jsonlstore, raw append, SQLite, bbolt and pgstore (a throwaway PostgreSQL
## cluster, when one starts) in one run; BENCH_FLAGS adds flags
## (e.g. BENCH_FLAGS='-only W1,W3 -out /tmp/bench.md', '-pg=false')
bench:
	cd bench && $(GO) run . $(BENCH_FLAGS)

## bench-quick: the harness with small counts (under two minutes once built)
bench-quick:
	cd bench && $(GO) run . -quick $(BENCH_FLAGS)

## bench-go: the store's go test benchmarks (append vs raw fdatasync, load latest, list, compaction)
bench-go:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./jsonlstore/

## fuzz: every fuzz target for FUZZTIME each, then a pass/fail table
## (FUZZ_TARGETS is the one list; a Fuzz function missing from it fails)
FUZZ_TARGETS = \
	./sessnap:FuzzUnmarshal ./sessnap:FuzzRoundTrip \
	./session:FuzzNormalizeLastError \
	./jsonlstore:FuzzParseLine ./jsonlstore:FuzzTailRecovery ./jsonlstore:FuzzArchive ./jsonlstore:FuzzBlobRead \
	./jsonlstore/internal/searchindex/searchdb:FuzzSchemaCheck \
	./fslease:FuzzParseRecord ./fslease:FuzzLeaseFile \
	./internal/record:FuzzApplyDelta ./internal/record:FuzzDiffApply ./internal/record:FuzzExpandPages \
	./importer/claudecode:FuzzParse ./importer/codex:FuzzParse ./importer:FuzzDecode \
	./importer/transcript:FuzzMarkdownKeepsStructure

fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZ_TARGETS="$(FUZZ_TARGETS)" scripts/soak.sh fuzz

## seeds: every seed-taking process test over SOAK_SEEDS seeds (default 500);
## make test runs each with one fixed seed, JSONLSTORE_SEED=N replays seed N
seeds:
	GO=$(GO) FUZZ_TARGETS="$(FUZZ_TARGETS)" scripts/soak.sh seeds

## mutate-sync: disable each sync call in turn; some power-loss test must notice
mutate-sync:
	JSONLSTORE_MUTATE_SYNC=1 $(GO) test -count=1 -run 'TestSyncMutation|TestCompactSyncMutation|TestBlobSyncMutation|TestCatalogSyncMutation' -v ./jsonlstore/

## soak: kill test 5000 rounds, lease contention 10000 rounds, power loss
## 2000 seeds, compaction crash at every sync point 100 seeds, compaction
## killed 500 rounds, readers racing holders, then every fuzz target for
## FUZZTIME; each step timed, a pass/fail table at the end, non-zero exit
## if any step failed. Counts: SOAK_* variables (see scripts/soak.sh).
soak:
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZ_TARGETS="$(FUZZ_TARGETS)" scripts/soak.sh soak
