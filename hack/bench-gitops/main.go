// Command bench-gitops measures the GitOps delivery against Flux alone, on one fresh local
// platform in one run (`make bench-gitops`), in alternating rounds (Plinth first in even
// rounds, the floor first in odd ones), one side at a time:
//
//   - Plinth: an OCIArtifact in plinth-system with a ConfigMap and a Deployment inline (fresh
//     names each round) and Cluster local as its target. plinth-controller pushes it to Cluster
//     local's OCIRegistry and applies an OCIRepository and a Kustomization in flux-system,
//     which the local platform's Flux controllers reconcile. The time runs from the create
//     until the OCIArtifact reports the target Ready with the pushed revision; when its
//     OCIRepository appeared (the push done), was Ready, and when its Kustomization was Ready
//     are recorded too.
//   - The floor: the same files pushed to the same registry with Flux's own library
//     (fluxcd/pkg/oci, what `flux push artifact` runs), timed on its own, then an OCIRepository
//     and a Kustomization created by hand from Flux's Go types (the same interval, namespace,
//     path, prune and target namespace), until the Kustomization is Ready with the pushed
//     revision.
//
// Each round's objects are deleted (and gone) before the next. It prints the medians, Plinth /
// (floor + push) (target ≤ 1.1) and (Plinth − its push) / floor, plinth-controller's CPU on
// each side and its peak RSS, the phases, and every process's CPU on each side. See
// docs/benchmarks.md, "GitOps delivery against Flux alone".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/oci"
	"github.com/google/go-containerregistry/pkg/crane"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/internal/localplatform"
	gitopsv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/gitops/v1alpha1"
	platformv1alpha1 "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	fluxdelivery "github.com/plinth-dev/plinth/pkg/gitops/delivery/flux"
	"github.com/plinth-dev/plinth/pkg/oci/artifact"
	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
)

// artifactNamespace is where the Plinth side's OCIArtifacts go: the platform's GitOps
// namespace, which holds Cluster local's OCIRegistry.
const artifactNamespace = "plinth-system"

// options are the command's flags.
type options struct {
	rounds, warmup        int
	timeout, roundTimeout time.Duration
	settle                time.Duration
	binDir                string
	controllerArgs        []string
}

func main() {
	var o options
	var controllerArgs string
	flag.IntVar(&o.rounds, "rounds", 5, "measured rounds; each has one Plinth delivery and one floor delivery")
	flag.IntVar(&o.warmup, "warmup", 1, "rounds run first and not counted (first pushes, the controllers' first requests)")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "give up after this long")
	flag.DurationVar(&o.roundTimeout, "round-timeout", 3*time.Minute, "give up on one delivery after this long")
	flag.DurationVar(&o.settle, "settle", 2*time.Second, "pause before each delivery, for the platform to finish what the one before started")
	flag.StringVar(&o.binDir, "bin-dir", filepath.Join("_output", "bin"), "directory of the component binaries")
	flag.StringVar(&controllerArgs, "controller-args", "", "extra plinth-controller flags, space-separated")
	flag.Parse()
	o.controllerArgs = strings.Fields(controllerArgs)
	if o.rounds < 1 || o.warmup < 0 {
		fmt.Fprintln(os.Stderr, "bench-gitops: --rounds must be at least 1 and --warmup not negative")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-gitops:", err)
		os.Exit(1)
	}
}

// env is what both sides use.
type env struct {
	o            options
	platform     *localplatform.Platform
	plinth       clientset.Interface
	repos        dynamic.NamespaceableResourceInterface
	kusts        dynamic.NamespaceableResourceInterface
	registry     string        // Cluster local's registry endpoint, localhost:<port>
	registryName string        // its OCIRegistry in artifactNamespace
	interval     time.Duration // Cluster local's Flux interval, which the floor uses too
	fluxDir      string        // where the floor writes its files for Flux's client
}

func run(o options) error {
	ctx, cancel := benchharness.Context(o.timeout)
	defer cancel()
	platform, stop, err := benchharness.StartPlatform(ctx, benchharness.PlatformOptions{BinDir: o.binDir, Nodes: 1, ControllerArgs: o.controllerArgs})
	if err != nil {
		return err
	}
	defer stop()
	clients, err := benchharness.AdminClients(platform)
	if err != nil {
		return err
	}
	plinth, kube, dyn := clients.Plinth, clients.Kube, clients.Dynamic
	fluxDir, err := os.MkdirTemp("", "plinth-bench-gitops-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(fluxDir)
	e := &env{o: o, platform: platform, plinth: plinth, fluxDir: fluxDir,
		repos: dyn.Resource(fluxdelivery.OCIRepositoryKind.GroupVersion().WithResource("ocirepositories")),
		kusts: dyn.Resource(fluxdelivery.KustomizationKind.GroupVersion().WithResource("kustomizations")),
	}
	if err := e.waitGitOps(ctx); err != nil {
		return err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: targetNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "Cluster %s has Flux and its registry %s runs; Flux interval %s\n", localplatform.LocalCluster, e.registry, e.interval)

	var plinthRounds []plinthRound
	var floorRounds []floorRound
	var plinthUsage, floorUsage usage
	for r := 0; r < o.warmup+o.rounds; r++ {
		measured := r >= o.warmup
		sides := []func() error{
			func() error {
				res, err := measure(ctx, e, &plinthUsage, measured, func(ctx context.Context) (plinthRound, error) { return e.plinthRound(ctx, r) })
				if err == nil && measured {
					plinthRounds = append(plinthRounds, res)
				}
				if err == nil {
					fmt.Fprintf(os.Stderr, "round %d Plinth: pushed %s, OCIRepository Ready %s, Kustomization Ready %s, OCIArtifact Ready %s (pushedAt − created %s)%s\n",
						r, ms(res.pushed), ms(res.repoReady), ms(res.applied), ms(res.ready), res.pushedAt, warmupNote(measured))
				}
				return err
			},
			func() error {
				res, err := measure(ctx, e, &floorUsage, measured, func(ctx context.Context) (floorRound, error) { return e.floorRound(ctx, r) })
				if err == nil && measured {
					floorRounds = append(floorRounds, res)
				}
				if err == nil {
					fmt.Fprintf(os.Stderr, "round %d floor: push %s, OCIRepository Ready %s, Kustomization Ready %s after the create%s\n",
						r, ms(res.push), ms(res.repoReady), ms(res.applied), warmupNote(measured))
				}
				return err
			},
		}
		if r%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			if err := side(); err != nil {
				return fmt.Errorf("round %d: %w", r, err)
			}
		}
	}
	controller, err := benchharness.ReadUsage(platform.ControllerPID())
	if err != nil {
		return err
	}
	s := summarize(plinthRounds, floorRounds)
	fmt.Printf("rounds=%d plinth=%s plinth_push=%s floor_push=%s floor=%s ratio=%.2f ratio_after_push=%.2f controller_cpu_plinth=%.2fs controller_cpu_floor=%.2fs controller_peak_rss=%.0fMiB\n",
		s.rounds, ms(s.plinth), ms(s.plinthPush), ms(s.floorPush), ms(s.floor), s.ratio, s.ratioAfterPush,
		plinthUsage.controllerCPU, floorUsage.controllerCPU, controller.PeakRSSMiB())
	fmt.Println()
	fmt.Print(table(s, plinthUsage, floorUsage, controller.PeakRSSMiB()))
	fmt.Println()
	fmt.Print(cpuTable(plinthUsage, floorUsage))
	return nil
}

func warmupNote(measured bool) string {
	if measured {
		return ""
	}
	return " (warm-up, not counted)"
}

// measure pauses for the settle time, then runs one side's delivery under the round timeout;
// for a measured round it adds the CPU the processes spent during it to u.
func measure[R any](ctx context.Context, e *env, u *usage, measured bool, deliver func(context.Context) (R, error)) (R, error) {
	var zero R
	select {
	case <-time.After(e.o.settle):
	case <-ctx.Done():
		return zero, context.Cause(ctx)
	}
	controllerBefore, err := benchharness.ReadUsage(e.platform.ControllerPID())
	if err != nil {
		return zero, err
	}
	cpuBefore, err := benchharness.ProcessCPU()
	if err != nil {
		return zero, err
	}
	began := time.Now()
	roundCtx, cancel := context.WithTimeout(ctx, e.o.roundTimeout)
	defer cancel()
	res, err := deliver(roundCtx)
	if err != nil {
		return zero, err
	}
	wall := time.Since(began)
	controllerAfter, err := benchharness.ReadUsage(e.platform.ControllerPID())
	if err != nil {
		return zero, err
	}
	cpuAfter, err := benchharness.ProcessCPU()
	if err != nil {
		return zero, err
	}
	if measured {
		u.add(controllerBefore, controllerAfter, cpuBefore, cpuAfter, wall)
	}
	return res, nil
}

// waitGitOps waits until Cluster local reports Flux available with its registry endpoint and
// the registry is Running: before that an OCIArtifact would wait for them, which is not what
// is measured.
func (e *env) waitGitOps(ctx context.Context) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		cl, err := e.plinth.PlatformV1alpha1().Clusters().Get(ctx, localplatform.LocalCluster, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("Cluster: %+v %+v", cl.Status.GitOps, cl.Status.Conditions)
		if !meta.IsStatusConditionTrue(cl.Status.Conditions, platformv1alpha1.ConditionFluxAvailable) || cl.Status.GitOps == nil ||
			cl.Status.GitOps.RegistryEndpoint == "" || cl.Status.GitOps.Registry == "" {
			return false, nil
		}
		e.registry = cl.Status.GitOps.RegistryEndpoint
		e.interval = platformv1alpha1.DefaultFluxInterval
		if i := cl.Spec.GitOps.FluxInterval; i != nil && i.Duration > 0 {
			e.interval = i.Duration
		}
		// status.gitOps.registry is <namespace>/<name>.
		namespace, name, ok := strings.Cut(cl.Status.GitOps.Registry, "/")
		if !ok || namespace != artifactNamespace {
			return false, fmt.Errorf("Cluster %s's registry is %s, not in %s", localplatform.LocalCluster, cl.Status.GitOps.Registry, artifactNamespace)
		}
		e.registryName = name
		reg, err := e.plinth.GitopsV1alpha1().OCIRegistries(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("OCIRegistry: %+v", reg.Status)
		if reg.Status.Phase != gitopsv1alpha1.RegistryPhaseRunning {
			return false, nil
		}
		// The floor pushes as plinth-controller does, with the registry's credential, which
		// only the user plinth-controller runs as can read.
		cred, err := registryauth.Read(reg.Status.StoragePath)
		if err != nil {
			return false, fmt.Errorf("reading OCIRegistry %s's credential: %w", name, err)
		}
		registryauth.Local.Set(e.registry, cred)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("Cluster %s's Flux or registry is not ready (%s): %w", localplatform.LocalCluster, last, err)
	}
	return nil
}

// plinthRound creates round r's OCIArtifact and waits until it reports the target Ready,
// noting when its Flux objects got there; then deletes it and waits until it and its Flux
// objects are gone.
func (e *env) plinthRound(ctx context.Context, r int) (plinthRound, error) {
	name := fmt.Sprintf("plinth-%02d", r)
	art, err := plinthArtifact(name, e.registryName, localplatform.LocalCluster, roundObjects(name))
	if err != nil {
		return plinthRound{}, err
	}
	artifacts := e.plinth.GitopsV1alpha1().OCIArtifacts(artifactNamespace)
	fluxName := fluxdelivery.ObjectName(artifactNamespace, name)
	repos, kusts := e.repos.Namespace(fluxNamespace), e.kusts.Namespace(fluxNamespace)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := benchharness.Await(ctx, benchharness.ByName(artifacts, name), artifactDelivered)
	pushed := benchharness.Await(ctx, benchharness.ByName(repos, fluxName), exists)
	repoReady := benchharness.Await(ctx, benchharness.ByName(repos, fluxName), repositoryReady(""))
	applied := benchharness.Await(ctx, benchharness.ByName(kusts, fluxName), kustomizationApplied(""))
	if err := benchharness.Opened(ctx, ready, pushed, repoReady, applied); err != nil {
		return plinthRound{}, err
	}
	start := time.Now()
	if _, err := artifacts.Create(ctx, art, metav1.CreateOptions{}); err != nil {
		return plinthRound{}, err
	}
	var res plinthRound
	for _, m := range []struct {
		mark *benchharness.Mark
		into *time.Duration
		what string
	}{{ready, &res.ready, "the OCIArtifact Ready"}, {pushed, &res.pushed, "its OCIRepository"},
		{repoReady, &res.repoReady, "its OCIRepository Ready"}, {applied, &res.applied, "its Kustomization Ready"}} {
		d, err := m.mark.Since(start)
		if err != nil {
			return plinthRound{}, fmt.Errorf("waiting for %s of %s/%s: %w", m.what, artifactNamespace, name, err)
		}
		*m.into = d
	}

	// What Flux applied is the revision the OCIArtifact pushed.
	done, err := artifacts.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return plinthRound{}, err
	}
	k, err := kusts.Get(ctx, fluxName, metav1.GetOptions{})
	if err != nil {
		return plinthRound{}, err
	}
	want := revisionOf(done.Spec.Tag, done.Status.Digest)
	if !kustomizationApplied(want)(k) {
		return plinthRound{}, fmt.Errorf("Kustomization %s/%s did not apply %s: %v", fluxNamespace, fluxName, want, k.Object["status"])
	}
	if done.Status.PushedAt != nil {
		res.pushedAt = done.Status.PushedAt.Sub(done.CreationTimestamp.Time)
	}

	if err := artifacts.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return plinthRound{}, err
	}
	if err := benchharness.Gone(ctx, time.Minute, func(ctx context.Context) error { _, err := artifacts.Get(ctx, name, metav1.GetOptions{}); return err },
		func(ctx context.Context) error { _, err := kusts.Get(ctx, fluxName, metav1.GetOptions{}); return err },
		func(ctx context.Context) error { _, err := repos.Get(ctx, fluxName, metav1.GetOptions{}); return err }); err != nil {
		return plinthRound{}, fmt.Errorf("deleting OCIArtifact %s/%s: %w", artifactNamespace, name, err)
	}
	return res, nil
}

// floorRound pushes round r's files with Flux's library (timed on its own), creates the
// OCIRepository and the Kustomization and waits until the Kustomization applied the pushed
// revision; then deletes both and waits until they are gone.
func (e *env) floorRound(ctx context.Context, r int) (floorRound, error) {
	name := fmt.Sprintf("floor-%02d", r)
	files, err := artifact.Files(manifestObjects(roundObjects(name)))
	if err != nil {
		return floorRound{}, err
	}
	dir := filepath.Join(e.fluxDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return floorRound{}, err
	}
	for file, content := range files {
		if err := os.WriteFile(filepath.Join(dir, file), content, 0o644); err != nil {
			return floorRound{}, err
		}
	}
	repository := "bench/" + name
	// The registry takes pushes only with its credential (waitGitOps put it in the keychain).
	client := oci.NewClient(append(oci.DefaultOptions(), crane.WithAuthFromKeychain(registryauth.Local)))
	var res floorRound
	began := time.Now()
	pushed, err := client.Push(ctx, e.registry+"/"+repository+":"+version, dir, oci.WithPushMetadata(oci.Metadata{
		Source: "bench-gitops", Revision: artifact.Revision(version, files),
	}))
	if err != nil {
		return floorRound{}, err
	}
	res.push = time.Since(began)
	_, digest, ok := strings.Cut(pushed, "@")
	if !ok {
		return floorRound{}, fmt.Errorf("Flux's client pushed %s, not <repository>@<digest>", pushed)
	}
	want := revisionOf(version, digest)

	repo, kustomization := floorObjects(name, artifact.URL(e.registry, repository, ""), version, digest, e.interval)
	repoBody, err := toUnstructured(repo)
	if err != nil {
		return floorRound{}, err
	}
	kustBody, err := toUnstructured(kustomization)
	if err != nil {
		return floorRound{}, err
	}
	repos, kusts := e.repos.Namespace(fluxNamespace), e.kusts.Namespace(fluxNamespace)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	repoReady := benchharness.Await(ctx, benchharness.ByName(repos, name), repositoryReady(want))
	applied := benchharness.Await(ctx, benchharness.ByName(kusts, name), kustomizationApplied(want))
	if err := benchharness.Opened(ctx, repoReady, applied); err != nil {
		return floorRound{}, err
	}
	start := time.Now()
	if _, err := repos.Create(ctx, repoBody, metav1.CreateOptions{}); err != nil {
		return floorRound{}, err
	}
	if _, err := kusts.Create(ctx, kustBody, metav1.CreateOptions{}); err != nil {
		return floorRound{}, err
	}
	if res.repoReady, err = repoReady.Since(start); err != nil {
		return floorRound{}, fmt.Errorf("waiting for OCIRepository %s/%s Ready: %w", fluxNamespace, name, err)
	}
	if res.applied, err = applied.Since(start); err != nil {
		return floorRound{}, fmt.Errorf("waiting for Kustomization %s/%s to apply %s: %w", fluxNamespace, name, want, err)
	}

	if err := kusts.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return floorRound{}, err
	}
	if err := repos.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return floorRound{}, err
	}
	if err := benchharness.Gone(ctx, time.Minute, func(ctx context.Context) error { _, err := kusts.Get(ctx, name, metav1.GetOptions{}); return err },
		func(ctx context.Context) error { _, err := repos.Get(ctx, name, metav1.GetOptions{}); return err }); err != nil {
		return floorRound{}, fmt.Errorf("deleting the floor's Flux objects %s/%s: %w", fluxNamespace, name, err)
	}
	return res, nil
}
