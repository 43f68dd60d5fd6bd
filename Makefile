# sessionstore — build, test and maintenance targets.
# `make test` is what CI runs (via .ci/run) on a clean clone.

GO       ?= go
PKGS     ?= ./...
FUZZTIME ?= 2m
BENCHTIME ?= 2s

.PHONY: all test fmt-check vet test-race demo bench soak fuzz mutate-sync

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

## demo: the demo workload on the default store ($$SESSIONSTORE_DIR or the XDG data dir)
demo:
	$(GO) run ./cmd/sessions demo

## bench: the store's benchmarks (append vs raw fdatasync, load latest, list, compaction)
bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./jsonlstore/

## fuzz: every fuzz target for FUZZTIME each
fuzz:
	@set -e; for spec in \
		./sessnap:FuzzUnmarshal ./sessnap:FuzzRoundTrip ./session:FuzzNormalizeLastError \
		./jsonlstore:FuzzParseLine ./fslease:FuzzParseRecord \
		./internal/record:FuzzApplyDelta ./internal/record:FuzzDiffApply; do \
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
