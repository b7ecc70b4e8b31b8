package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	etcd, err := embeddedetcd.Start(ctx, embeddedetcd.Options{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()

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
