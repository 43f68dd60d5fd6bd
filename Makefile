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

## fuzz: every fuzz target for FUZZTIME each, then a pass/fail table
## (FUZZ_TARGETS is the one list; a Fuzz function missing from it fails)
FUZZ_TARGETS = \
	./sessnap:FuzzUnmarshal ./sessnap:FuzzRoundTrip \
	./session:FuzzNormalizeLastError \
	./jsonlstore:FuzzParseLine ./jsonlstore:FuzzTailRecovery ./jsonlstore:FuzzArchive \
	./fslease:FuzzParseRecord ./fslease:FuzzLeaseFile

fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZ_TARGETS="$(FUZZ_TARGETS)" scripts/soak.sh fuzz

## mutate-sync: disable each sync call in turn; some power-loss test must notice
mutate-sync:
	JSONLSTORE_MUTATE_SYNC=1 $(GO) test -count=1 -run 'TestSyncMutation|TestCompactSyncMutation' -v ./jsonlstore/

## soak: kill test 5000 rounds, lease contention 10000 rounds, power loss
## 2000 seeds, compaction crash at every sync point 100 seeds, compaction
## killed 500 rounds, readers racing holders, then every fuzz target for
## FUZZTIME; each step timed, a pass/fail table at the end, non-zero exit
## if any step failed. Counts: SOAK_* variables (see scripts/soak.sh).
soak:
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZ_TARGETS="$(FUZZ_TARGETS)" scripts/soak.sh soak
