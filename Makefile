# Hobbs — make targets. `make test` is what CI runs (.ci/run).
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
BIN      ?= ./hobbs

.PHONY: build install test test-short bench lint fuzz clean

## build: static binary at ./hobbs (CGO_ENABLED=0, runs on any Linux base image)
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/hobbs

## install: static binary where your shell finds it: BINDIR, else the first of ~/.local/bin, ~/bin and
## $(go env GOPATH)/bin that is on $PATH, else ~/.local/bin, and then it fails naming the PATH line to add (or,
## when ~/.profile already adds that directory, as Debian's does for ~/.local/bin once it exists, to log in again)
BINDIR ?=
install:
	@dir='$(BINDIR)'; \
	if [ -z "$$dir" ]; then \
	  for d in "$$HOME/.local/bin" "$$HOME/bin" "$$($(GO) env GOPATH)/bin"; do \
	    case ":$$PATH:" in *":$$d:"*) dir=$$d; break;; esac; \
	  done; \
	fi; \
	dir=$${dir:-$$HOME/.local/bin}; \
	mkdir -p "$$dir" && \
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o "$$dir/hobbs" ./cmd/hobbs || exit 1; \
	echo "installed $$dir/hobbs"; \
	case ":$$PATH:" in *":$$dir:"*) ;; *) \
	  rel=$${dir#$$HOME/}; \
	  if [ "$$rel" != "$$dir" ] && grep -qsF "$$rel" "$$HOME/.profile"; then \
	    echo "$$dir is not on this shell's PATH yet; your ~/.profile adds it once it exists: log in again, or run: . ~/.profile"; \
	  else \
	    echo "$$dir is not on your PATH; add it, then run hobbs again:"; \
	    echo "  export PATH=\"$$dir:\$$PATH\"   # and the same line in your shell's profile (~/.profile)"; \
	  fi; exit 1;; esac; \
	found=$$(command -v hobbs); \
	if [ "$$found" != "$$dir/hobbs" ]; then \
	  echo "your shell finds another hobbs first: $$found; remove it, or install with make install BINDIR=$$(dirname "$$found")"; exit 1; \
	fi

## test: everything CI runs — the short suite with no Docker reachable, then
## everything: unit tests, CLI scenarios, Docker end-to-end, release snapshot.
## Outside CI, a test that needs a tool this machine lacks (podman,
## docker-registry, age, …) is skipped, and the end lists each with the
## package that brings the tool; with CI=true such a test fails instead
## (src/tooltest). go test runs through tests/gotest, which prints a line per
## package as it ends and per slow test (the end-to-end suite runs for
## minutes), failures whole, and exits with go test's status.
test: lint
	@skipped=$$(mktemp) && gotest=$$(mktemp) || exit 1; \
	$(GO) build -o "$$gotest" ./tests/gotest || { rm -f "$$skipped" "$$gotest"; exit 1; }; \
	echo "DOCKER_HOST=unix:///nonexistent/docker.sock $(GO) test -count=1 -short -timeout 5m ./..."; \
	DOCKER_HOST=unix:///nonexistent/docker.sock HOBBS_SKIPPED=$$skipped GOTEST_GO="$(GO)" "$$gotest" -count=1 -short -timeout 5m ./... && \
	echo "$(GO) test -count=1 -timeout 25m ./..." && \
	HOBBS_SKIPPED=$$skipped GOTEST_GO="$(GO)" "$$gotest" -count=1 -timeout 25m ./...; rc=$$?; \
	if [ -s "$$skipped" ]; then \
	  echo "make test: not run here, for want of what CI installs (.ci/run):"; sort -u "$$skipped"; \
	fi; \
	rm -f "$$skipped" "$$gotest"; exit $$rc

## test-short: unit tests and CLI scenarios; needs no Docker (under a minute)
test-short:
	$(GO) test -count=1 -short ./...

## bench: performance comparisons against the anchors named in the issues (not in CI)
bench:
	@if [ -x tests/bench/run.sh ]; then tests/bench/run.sh; else $(GO) test -run '^$$' -bench . -benchtime 3x ./...; fi

## lint: formatting and vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## fuzz: run each fuzz target briefly (FUZZTIME=30s to go longer)
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; done

clean:
	rm -f $(BIN)

## release-tools: goreleaser and cyclonedx-gomod at pinned versions in $(go env GOPATH)/bin, built from the Go
## module proxy when missing or of another version (the first build takes minutes; later runs reuse it)
GORELEASER_VERSION ?= v2.15.1
CYCLONEDX_VERSION  ?= v1.10.0
RELEASE_CONFIG     := dist/release/goreleaser.yaml
.PHONY: release-tools release-check release-snapshot
release-tools:
	@gobin=$$($(GO) env GOPATH)/bin; \
	has() { $(GO) version -m "$$gobin/$$1" 2>/dev/null | grep -q "^[[:space:]]*mod[[:space:]]*$$2[[:space:]]*$$3[[:space:]]"; }; \
	has goreleaser github.com/goreleaser/goreleaser/v2 $(GORELEASER_VERSION) || \
	  { echo "release-tools: go install goreleaser $(GORELEASER_VERSION)"; $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION); } || exit 1; \
	has cyclonedx-gomod github.com/CycloneDX/cyclonedx-gomod $(CYCLONEDX_VERSION) || \
	  { echo "release-tools: go install cyclonedx-gomod $(CYCLONEDX_VERSION)"; $(GO) install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_VERSION); }

## release-check: goreleaser check of the release configuration
release-check: release-tools
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" goreleaser check --config $(RELEASE_CONFIG)

## release-snapshot: what a release builds, offline and unpublished: hobbs for linux and darwin on amd64 and
## arm64, an archive of each, checksums.txt and an SBOM per binary, in dist/release/.out (docs/release.md)
release-snapshot: release-check
	PATH="$$($(GO) env GOPATH)/bin:$$PATH" goreleaser release --snapshot --clean --config $(RELEASE_CONFIG)
