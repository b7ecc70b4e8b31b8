package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/plinth-dev/plinth/internal/benchharness"
	"github.com/plinth-dev/plinth/pkg/embeddedetcd"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestRestartKeepsData writes objects, stops the server, starts a new one on the same data
// directory and reads them back, along with the same admin kubeconfig.
func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	first := framework.StartPlinth(t, framework.Options{Dir: dir})
	created, err := first.Client.ScoreV1b1().Workloads("keep").Create(ctx, newWorkload("web", "kubernetes"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Client.ScoreV1b1().PlatformPolicies().Create(ctx, newPolicy("keep", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first.Stop()

	second := framework.StartPlinth(t, framework.Options{Dir: dir})
	got, err := second.Client.ScoreV1b1().Workloads("keep").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("workload after restart: %v", err)
	}
	if got.UID != created.UID || got.Spec.Containers["main"].Image != created.Spec.Containers["main"].Image {
		t.Errorf("workload changed across restart: uid %s→%s", created.UID, got.UID)
	}
	if _, err := second.Client.ScoreV1b1().PlatformPolicies().Get(ctx, "keep", metav1.GetOptions{}); err != nil {
		t.Errorf("policy after restart: %v", err)
	}
	// The kubeconfig written by the first run still authenticates.
	if out, err := framework.Kubectl(second.Kubeconfig, "get", "wl", "web", "-n", "keep", "-o", "name"); err != nil || strings.TrimSpace(out) != "workload.score.dev/web" {
		t.Errorf("kubectl after restart: %v %s", err, out)
	}
}

// TestExternalEtcd runs the server against an etcd it did not start (--etcd-servers) and checks
// where objects are stored.
func TestExternalEtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	etcd := startExternalEtcd(ctx, t)

	p := framework.StartPlinth(t, framework.Options{EtcdServers: etcd.ClientURL})
	if _, err := p.Client.ScoreV1b1().Workloads("ext").Create(ctx, newWorkload("web", "kubernetes"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.ClientURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Get(ctx, "/registry/plinth.dev/score.dev/workloads/ext/web")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || !strings.Contains(string(resp.Kvs[0].Value), `"apiVersion":"score.dev/v1b1"`) {
		t.Fatalf("etcd key /registry/plinth.dev/score.dev/workloads/ext/web = %v", resp.Kvs)
	}
	// Nothing was written to the embedded etcd's default location.
	if out := p.Logs(); strings.Contains(out, "Started embedded etcd") {
		t.Errorf("server started its own etcd although --etcd-servers was given")
	}
	p.Stop()
}

// TestConsistentGetFromCache runs two servers on one etcd, as an HA pair would: the reader,
// with --consistent-get-from-cache, answers a GET with what its peer wrote a moment before
// (a read of its watch cache at any version, resourceVersion=0, does not promise that), and
// a deleted object is gone at once. Its GETs are answered by the watch cache: etcd is asked
// only for its current revision, never for the object.
func TestConsistentGetFromCache(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	etcd := startExternalEtcd(ctx, t)
	writer := framework.StartPlinth(t, framework.Options{EtcdServers: etcd.ClientURL})
	reader := framework.StartPlinth(t, framework.Options{EtcdServers: etcd.ClientURL, ExtraArgs: []string{"--consistent-get-from-cache"}})
	written, read := writer.Client.ScoreV1b1().Workloads("ha"), reader.Client.ScoreV1b1().Workloads("ha")

	w, err := written.Create(ctx, newWorkload("web", "kubernetes"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Until its watch cache has listed Workloads once, a server reads them from etcd; that is
	// a moment after it reports ready.
	var before map[string]float64
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		first := etcdRequests(ctx, t, reader)
		if _, err := read.Get(ctx, "web", metav1.GetOptions{}); err != nil {
			return false, err
		}
		before = etcdRequests(ctx, t, reader)
		return before["get"] == first["get"], nil
	}); err != nil {
		t.Fatalf("the reader's GETs still reach etcd: %v", err)
	}
	const updates = 50
	for i := range updates {
		w.Annotations = map[string]string{"round": strconv.Itoa(i)}
		if w, err = written.Update(ctx, w, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := read.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != w.ResourceVersion {
			t.Fatalf("round %d: the reader answered resourceVersion %s (annotation %q) after its peer wrote %s", i, got.ResourceVersion, got.Annotations["round"], w.ResourceVersion)
		}
	}
	if err := written.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := read.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a GET right after the peer's delete: %v, %v", got, err)
	}
	after := etcdRequests(ctx, t, reader)
	if n := after["get"] - before["get"]; n != 0 {
		t.Errorf("%v GETs of the object reached etcd; want none", n)
	}
	if n := after["getCurrentResourceVersion"] - before["getCurrentResourceVersion"]; n < updates+1 {
		t.Errorf("etcd was asked for its revision %v times for %d GETs", n, updates+1)
	}
}

// etcdRequests are a server's etcd requests for Workloads so far, by operation, from its
// etcd_requests_total metric.
func etcdRequests(ctx context.Context, t *testing.T, p *framework.Plinth) map[string]float64 {
	t.Helper()
	body, err := p.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := benchharness.SumBy(string(body), "etcd_requests_total", func(l map[string]string) string {
		if l["group"] != "score.dev" || l["resource"] != "workloads" {
			return "" // another resource's, dropped below
		}
		return l["operation"]
	})
	if err != nil {
		t.Fatal(err)
	}
	delete(counts, "")
	if len(counts) == 0 {
		t.Fatal("no etcd_requests_total for score.dev workloads in the reader's metrics")
	}
	return counts
}

// startExternalEtcd starts an etcd for servers started with --etcd-servers; it is closed when
// the test ends, after the servers (cleanups run last-registered first).
func startExternalEtcd(ctx context.Context, t *testing.T) *embeddedetcd.Etcd {
	t.Helper()
	etcd, err := embeddedetcd.Start(ctx, embeddedetcd.Options{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	return etcd
}
