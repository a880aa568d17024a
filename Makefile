# lake — build, test and run targets. `make help` lists them.
SHELL := /bin/bash
GO ?= go
PKGS := ./...

FUZZTIME ?= 60s
# GOTESTFLAGS go to every go test run below; the test command sets
# -vet=off, as its lint steps have run go vet over the same packages.
GOTESTFLAGS ?=

.PHONY: compat help tools test lint lint-root lint-cdk vet fmt-check unit bench fuzz lambdas run build synth deploy destroy cdk-test integration localstack-up localstack-test localstack-down bench-tools bench-quick bench-go

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 20

run: ## run lake locally (RocksDB, registration API, refresh, Flight SQL) with the demo catalog
	@scripts/run-local.sh

build: ## build bin/lake and bin/discovery (with the tests' build settings, so they share the build cache; the image builds discovery static)
	$(GO) build -o bin/lake ./cmd/lake
	$(GO) build -o bin/discovery ./functions/discovery

tools: ## install what the build and tests need (librocksdb-dev, npm tools, staticcheck)
	@scripts/install-deps.sh

test: tools ## everything CI runs: lint, every test (integration and CDK too), the quick benchmark
	@scripts/test.sh

lint: lint-root lint-cdk ## gofmt, go vet and staticcheck (root module with the integration tag, and infra/cdk)

lint-root: tools fmt-check
	$(GO) vet -tags integration $(PKGS)
	bin/staticcheck -tags integration $(PKGS)

lint-cdk: tools
	cd infra/cdk && $(GO) vet ./... && ../../bin/staticcheck ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet -tags integration $(PKGS)

unit: tools ## go test over the whole module
	$(GO) test $(GOTESTFLAGS) -timeout 20m $(PKGS)

compat: ## the client-compatibility suite (JDBC driver, DBeaver, ADBC, Grafana, Metabase, Superset calls replayed), listing each call
	set -o pipefail; $(GO) test $(GOTESTFLAGS) -count=1 -run '^TestCompat' -v ./internal/discovery/ | grep -vE '^=== (RUN|PAUSE|CONT)'

integration: tools ## the end-to-end suite (localstack/), here against dynalite, versitygw and the Lambda emulator
	$(GO) test $(GOTESTFLAGS) -tags integration -count=1 -timeout 20m ./localstack/...

LOCALSTACK_ENV := AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1

localstack-up: ## start LocalStack 4.14.0 with Docker and wait for its init hook
	docker compose -f localstack/docker-compose.yml up -d --wait

localstack-test: tools ## the end-to-end suite against LocalStack (make localstack-up first)
	$(LOCALSTACK_ENV) $(GO) test -tags integration -count=1 -timeout 20m ./localstack/...

localstack-down: ## stop LocalStack
	docker compose -f localstack/docker-compose.yml down -v

# The benchmark peer, arrow-go's SQLite Flight SQL example server, is a `tool`
# in go.mod: pinned there, and built against the module's own arrow-go.
SQLITE_PEER := github.com/apache/arrow-go/v18/arrow/flight/flightsql/example/cmd/sqlite_flightsql_server

bench-tools: tools build ## build the benchmark peer (arrow-go's SQLite Flight SQL server, a go.mod tool) and lake's binaries
	$(GO) build -o bin/sqlite_flightsql_server $(SQLITE_PEER)

bench: bench-tools ## the side-by-side benchmark driver (full sizes, the SQLite peer, the plot) → bench/RESULTS.md, then the Go benchmarks
	$(GO) vet -tags plot ./bench/lakebench
	$(GO) run -tags plot ./bench/lakebench
	$(MAKE) bench-go

# The test command's run: no SQLite peer (section 1) and no plotting library
# (gonum, -tags plot), the two largest builds only the benchmark needs.
bench-quick: tools build ## the benchmark driver with small sizes (under two minutes; CI runs it), printing only; no SQLite peer, no plot
	$(GO) run ./bench/lakebench -quick -peer=false -out ''

bench-go: tools ## the Go benchmarks of every package (go test -bench)
	$(GO) test -run '^$$' -bench . -benchtime 3x -timeout 60m $(PKGS)

fuzz: ## run every fuzz target for FUZZTIME each (default 60s); findings land in testdata/fuzz
	@scripts/fuzz.sh $(FUZZTIME)

lambdas: ## build the register and refresh bootstrap binaries (arm64 and host) and print their sizes
	@scripts/build-lambdas.sh

cdk-test: tools ## the CDK app's assertion and cdk-nag tests (its own Go module)
	cd infra/cdk && JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 $(GO) test $(GOTESTFLAGS) -timeout 20m ./...

synth: ## cdk synth with the pinned CDK CLI, offline, into infra/cdk/cdk.out (CDK_ARGS; default -c internal=true, as a TLS certificate or an internal NLB is required)
	@scripts/cdk.sh synth --quiet $(if $(CDK_ARGS),$(CDK_ARGS),-c internal=true)

deploy: ## cdk deploy (AWS credentials, Docker; -c certificateArn=… -c refreshMinutes=…)
	@scripts/cdk.sh deploy --require-approval broadening $(CDK_ARGS)

destroy: ## cdk destroy (the table and snapshot bucket are retained)
	@scripts/cdk.sh destroy $(CDK_ARGS)
