# sessionstore — build, test and maintenance targets.
# `make test` is what CI runs (via .ci/run) on a clean clone.

GO      ?= go
PKGS    ?= ./...
FUZZTIME ?= 2m

.PHONY: all test fmt-check vet test-race demo bench soak fuzz lint

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
