# Plinth: a Kubernetes aggregated API server for platform APIs.
#   make run     the local platform: etcd, kube-apiserver, kube-controller-manager, Flux and
#                plinth-apiserver behind an APIService (make run-standalone: plinth alone)
#   make test    unit and integration tests against real etcd, plinth-apiserver and kubectl,
#                and the short form of the faults under load (test/faults)
#   make test-faults  the long form of the faults under load: SIGKILL each component in turn,
#                three rounds, under more load; prints the table docs/reliability.md shows
#   make images  OCI images of plinth-apiserver and plinth-controller (IMAGE_REPO=… pushes them)
#   make verify  generated code and artifacts/deploy (rendered from charts/plinth) are current,
#                gofmt, go vet

GO          ?= go
BIN         := _output/bin
PLINTH_DIR  ?= .plinth
ETCD_PORT   ?= 12379
ETCD_PEER_PORT ?= 12380
KUBE_PORT   ?= 16443
PLINTH_PORT ?= 18443
CONTROLLER_PORT ?= 18280
KWOK_PORT   ?= 18281
REGISTRY_PORT ?= 5000
KUBE_TOOLS  := kubectl kube-apiserver kube-controller-manager kube-scheduler etcd etcdctl etcdutl kwok
# The real node's (internal/localplatform/node): kubelet and kube-proxy v1.37.1, containerd
# v2.4 with its runc shim and ctr, CoreDNS v1.15 for its pods; runc and the CNI plugins come
# from Debian's packages.
NODE_TOOLS  := kubelet kube-proxy containerd containerd-shim-runc-v2 ctr coredns
# Flux's controllers v1.9.6, which the local platform runs against its kube-apiserver.
FLUX_TOOLS  := source-controller kustomize-controller
GOTESTFLAGS ?=
# kustomize (linked into plinth-controller through krusty and Helm) imports Go's plugin package
# unless this tag is set, which forces external linking and keeps unused methods (~45 MB).
GOTAGS      ?= kustomize_disable_go_plugin_support

.PHONY: all build images tools run run-standalone test test-unit test-integration test-faults-short test-faults test-replicas bench bench-scale bench-go bench-controller bench-compute bench-gitops bench-packs bench-watch fuzz verify generate clean clean-all

all: build

# Static and without local paths, as the images are built (hack/images): the two share the
# build cache, so make images after make build only links.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/plinth-apiserver ./cmd/apiserver
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(GOTAGS) -o $(BIN)/plinth-controller ./cmd/controller
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/plinth-local-up ./hack/local-up

# OCI images of plinth-apiserver and plinth-controller, built without Docker or a base image
# (hack/images): OCI layouts under _output/images, pushed to $(IMAGE_REPO)/<name>:<release>
# when IMAGE_REPO is set (login: IMAGE_REPO_USERNAME/IMAGE_REPO_PASSWORD or ~/.docker/config.json).
IMAGE_REPO ?=
RELEASE    ?=
PLATFORMS  ?= linux/amd64
images:
	$(GO) run ./hack/images --repo "$(IMAGE_REPO)" --release "$(RELEASE)" --platforms "$(PLATFORMS)"

# Real Kubernetes binaries built from the Go module proxy (hack/tools): kubectl, kube-apiserver,
# kube-controller-manager and kube-scheduler v1.37.1, etcd v3.6 with etcdctl and etcdutl (backup
# and restore, docs/install.md), kwok v0.8, Flux's source-controller and kustomize-controller
# with their CRDs, and the real node's kubelet, kube-proxy and containerd (with runc and the CNI
# plugins from Debian); rebuilt only when their go.mod changes.
tools:
	hack/build-tools.sh $(KUBE_TOOLS) $(NODE_TOOLS) $(FLUX_TOOLS)
	hack/install-node-deps.sh

run: build tools
	@echo "kubectl v1.37.1 is $(BIN)/kubectl; data lives in $(PLINTH_DIR)/local (make clean removes it)"
	$(BIN)/plinth-local-up --dir $(PLINTH_DIR)/local --etcd-port $(ETCD_PORT) --etcd-peer-port $(ETCD_PEER_PORT) \
		--kube-port $(KUBE_PORT) --plinth-port $(PLINTH_PORT) --controller-port $(CONTROLLER_PORT) --kwok-port $(KWOK_PORT) \
		--registry-port $(REGISTRY_PORT) --provisioners-config artifacts/controller/provisioners.yaml

run-standalone: build tools
	@echo "kubectl v1.37.1 is $(BIN)/kubectl; data lives in $(PLINTH_DIR) (make clean removes it)"
	$(BIN)/plinth-apiserver --standalone --standalone-dir $(PLINTH_DIR) --data-dir $(PLINTH_DIR)/data \
		--bind-address 127.0.0.1 --secure-port $(PLINTH_PORT)

test: test-unit test-integration test-faults-short

test-unit:
	$(GO) test $(GOTESTFLAGS) ./pkg/... ./cmd/... ./internal/... ./hack/...

test-integration: build tools
	$(GO) test $(GOTESTFLAGS) -count=1 -timeout 35m ./test/integration/...

# Faults under load (test/faults, docs/reliability.md): etcd (with fsync), kube-apiserver,
# plinth-apiserver, the leading plinth-controller and the local registry killed in turn while a
# load writes. The short form (a small load, each fault once, about three minutes) runs in
# `make test`; the long form (more load, three rounds, the default 15 s lease) writes its table
# to _output/faults-long.md.
test-faults-short: build tools
	$(GO) test $(GOTESTFLAGS) -count=1 -timeout 10m ./test/faults/...

test-faults: build tools
	PLINTH_FAULTS=long PLINTH_FAULTS_REPORT=$(CURDIR)/_output/faults-long.md $(GO) test $(GOTESTFLAGS) -count=1 -timeout 60m -v -run TestFaults ./test/faults/

# Losing a replica under load (docs/reliability.md, "Losing a replica"): the chart's highly
# available profile installed on the local platform's real node, the fault suite's load through
# kube-apiserver, and one plinth-apiserver replica, the leading etcd member and the leading
# plinth-controller SIGKILLed in turn, after a rolling restart. Writes its table into
# docs/reliability.md (about four minutes).
test-replicas: build tools
	PLINTH_REPLICAS=1 PLINTH_REPLICAS_DOCS=$(CURDIR)/docs/reliability.md $(GO) test $(GOTESTFLAGS) -count=1 -timeout 20m -v -run TestReplicaLoss ./test/faults/

# Plinth against a CRD with the same schema and ConfigMaps of the same size (protobuf) on the
# same kube-apiserver, and against raw etcd, with both servers' CPU per get: writes the table
# into docs/benchmarks.md and the figures into docs/benchmarks-api.json.
BENCH_FLAGS ?=
bench: build tools
	$(GO) run ./hack/bench-api --docs docs/benchmarks.md --json docs/benchmarks-api.json $(BENCH_FLAGS)
	$(GO) run ./hack/bench-scale --docs docs/benchmarks.md

# 10,000 Workloads in one namespace, then in 100 namespaces, next to the same CRD objects on a
# fresh local platform without plinth-controller: list (in full and in pages of 500), watch and
# kubectl get latency, and plinth-apiserver's memory (docs/benchmarks.md, "Scale"; about four
# minutes). make bench runs it after bench-api.
bench-scale: build tools
	$(GO) run ./hack/bench-scale --docs docs/benchmarks.md

# The Go benchmarks (go test -bench) of the packages and of the API against a standalone server.
bench-go: build tools
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./pkg/... ./test/integration/...

# The controller end to end on a fresh local platform, against the floor: time to all-Ready of
# 100 and 1000 Workloads, then of exactly the objects Plinth made for them applied straight to
# kube-apiserver (all Available), the ratio, controller CPU and memory, and the writes per
# Workload of both runs (docs/benchmarks.md, "plinth-controller end to end").
bench-controller: build tools
	$(GO) run ./hack/bench-workloads --workloads 100
	$(GO) run ./hack/bench-workloads --workloads 1000

# TenantComputes against the floor on one fresh local platform, in one run: 500 TenantComputes
# to Ready through plinth-controller's kubernetes provider, then the same Deployments and
# Services applied straight to kube-apiserver until Available; prints both times, their ratio
# and the controller's CPU and peak RSS (docs/benchmarks.md, "Tenant compute").
bench-compute: build tools
	$(GO) run ./hack/bench-compute --tenants 500

# OCIArtifacts delivered through Flux against Flux alone on one fresh local platform, in
# alternating rounds: an OCIArtifact to Cluster local until it reports the Kustomization Ready,
# against the same files pushed with fluxcd/pkg/oci and a hand-made OCIRepository and
# Kustomization until Ready; prints the medians, Plinth / (floor + push), the phases and the
# controller's CPU and peak RSS (docs/benchmarks.md, "GitOps delivery against Flux alone").
bench-gitops: build tools
	$(GO) run ./hack/bench-gitops --rounds 5

# Infrastructure packs against the Helm SDK on one fresh local platform, in alternating rounds:
# a pack of a 200-object chart from the local registry delivered to a Cluster with engine
# Kubectl (create → instance Ready) against action.Install of the same chart (pull + install);
# then drift passes over 1000 delivered objects (CPU and wall time) (docs/benchmarks.md,
# "Infrastructure packs").
bench-packs: build tools
	$(GO) run -tags $(GOTAGS) ./hack/bench-packs --rounds 5

# 1000 concurrent watchers on Workloads, on a fresh local platform without plinth-controller:
# through kube-apiserver as a tenant, then directly at plinth-apiserver; event latency (update
# acknowledged → event received, median and p99 over all watchers) and plinth-apiserver's and
# kube-apiserver's memory before, with the watches open and at the peak (docs/reliability.md,
# "Fair under load").
bench-watch: build tools
	$(GO) run ./hack/bench-watch --watchers 1000
	$(GO) run ./hack/bench-watch --watchers 1000 --direct

# Every go test -fuzz target (decoding and validating every kind, Score documents and
# placeholders, kubeconfigs, provisioner templates and files, pack versions) for FUZZTIME each;
# make test runs their seed corpora only (docs/reliability.md, "Fuzzed and hostile input").
FUZZTIME ?= 30s
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) hack/fuzz.sh

verify:
	hack/verify-codegen.sh
	hack/verify-deploy.sh
	@$(GO) run ./hack/bench-crd | diff -u test/bench/workload-crd.yaml - || \
		{ echo "test/bench/workload-crd.yaml is out of date: run make generate"; exit 1; }
	@unformatted=$$(gofmt -l cmd pkg test hack/tools 2>/dev/null); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

generate:
	hack/update-codegen.sh
	hack/update-deploy.sh
	$(GO) run ./hack/bench-crd > test/bench/workload-crd.yaml

# Removes the platforms' data and credentials; keeps the built binaries.
clean:
	rm -rf $(PLINTH_DIR)

clean-all: clean
	rm -rf _output
