# agentspec's everyday commands. `make help` lists them.
GO      ?= go
BIN     ?= bin/agentspec
PKGS    ?= ./...

.PHONY: help build test lint bench schema demo demo-pipeline tools clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/agentspec, stripped of its symbol table and debug information (the release build)
	$(GO) build -ldflags="-s -w" -o $(BIN) ./cmd/agentspec

tools: ## install what the tests need (ripgrep) when it is missing
	@scripts/ensure-tools.sh

test: tools ## run every test, with the race detector, in random order
	$(GO) test -race -shuffle=on -count=1 $(PKGS)

VET_GOOS ?= darwin windows freebsd

lint: ## go vet (here and for darwin, windows, freebsd), gofmt and go mod tidy must all be clean
	$(GO) vet $(PKGS)
	@for os in $(VET_GOOS); do echo "GOOS=$$os $(GO) vet $(PKGS)"; GOOS=$$os $(GO) vet $(PKGS) || exit 1; done
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff

bench: tools ## benchmarks, with ratios against their anchors (ripgrep) measured in the same run
	scripts/bench.sh

schema: ## write the composed JSON Schemas: agentspec.schema.json, and the custom-capability example's with its Clock
	$(GO) run ./cmd/agentspec schema > agentspec.schema.json
	$(GO) run ./examples/custom-capability schema > examples/custom-capability/agentspec.schema.json

demo: ## run the quickstart agent offline (scripted model, no API key) in a scratch copy of its workspace
	scripts/demo.sh

demo-pipeline: ## run the review-fix pipeline offline (triage -> fix each file -> review) in a scratch copy of its workspace
	scripts/demo-pipeline.sh

clean: ## remove build output and stray test binaries
	rm -rf bin
	find . -name "*.test" -type f -delete
