package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/plinth-dev/plinth/internal/localplatform"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// volumesManifest is a claim of the default class nobody uses and a StatefulSet whose claim
// template gets one claim per pod, deleted with the StatefulSet, as the built-in provisioners
// write their databases.
const volumesManifest = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: notes, namespace: volumes}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 100Mi}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: volumes}
spec:
  serviceName: db
  replicas: 1
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Retain}
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: mirror.gcr.io/postgres:17-alpine
        volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// TestLocalPlatformVolumes: a claim of the default StorageClass waits for its first pod; a
// StatefulSet's claim gets a volume on the node its pod was placed on, the pod runs and is
// Ready on a kwok node, and deleting the StatefulSet deletes its claim, then the volume and
// its directory. The claim nobody uses can be deleted (the protection controllers run).
func TestLocalPlatformVolumes(t *testing.T) {
	p := framework.StartLocalPlatformWith(t, func(c *localplatform.Config) { c.KubernetesOnly, c.Nodes = true, 2 })
	cfg, err := p.AdminConfig()
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "volumes"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := framework.KubectlStdin(p.AdminKubeconfig(), volumesManifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	claims := kube.CoreV1().PersistentVolumeClaims("volumes")
	// eventually polls until check says done; its last complaint is the failure message.
	eventually := func(what string, timeout time.Duration, check func(ctx context.Context) error) {
		t.Helper()
		var last error
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			last = check(ctx)
			return last == nil, nil
		})
		if err != nil {
			out, _ := framework.Kubectl(p.AdminKubeconfig(), "get", "pods,pvc,pv,events", "-n", "volumes", "-o", "wide")
			t.Fatalf("%s: %v (last: %v)\n%s", what, err, last, out)
		}
	}

	start := time.Now()
	var pod *corev1.Pod
	eventually("the StatefulSet's pod becomes Ready", 2*time.Minute, func(ctx context.Context) error {
		var err error
		if pod, err = kube.CoreV1().Pods("volumes").Get(ctx, "db-0", metav1.GetOptions{}); err != nil {
			return err
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && pod.Status.Phase == corev1.PodRunning {
				return nil
			}
		}
		return fmt.Errorf("pod db-0 is %s on node %q", pod.Status.Phase, pod.Spec.NodeName)
	})
	t.Logf("pod db-0 Running and Ready on %s %s after the apply", pod.Spec.NodeName, time.Since(start).Round(time.Millisecond))

	claim, err := claims.Get(ctx, "data-db-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != localplatform.StorageClassName {
		t.Fatalf("claim data-db-0: phase %s, class %v; want Bound, class %s", claim.Status.Phase, claim.Spec.StorageClassName, localplatform.StorageClassName)
	}
	pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Status.Phase != corev1.VolumeBound || pv.Annotations["pv.kubernetes.io/provisioned-by"] != localplatform.VolumeProvisioner || pv.Spec.HostPath == nil {
		t.Fatalf("volume %s: phase %s, annotations %v, hostPath %v", pv.Name, pv.Status.Phase, pv.Annotations, pv.Spec.HostPath)
	}
	if size := pv.Spec.Capacity[corev1.ResourceStorage]; size.String() != "1Gi" {
		t.Errorf("volume %s holds %s, the claim asked for 1Gi", pv.Name, size.String())
	}
	if terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms; len(terms) != 1 || terms[0].MatchExpressions[0].Values[0] != pod.Spec.NodeName {
		t.Errorf("volume %s is pinned to %+v, its pod runs on %s", pv.Name, terms, pod.Spec.NodeName)
	}
	if info, err := os.Stat(pv.Spec.HostPath.Path); err != nil || !info.IsDir() {
		t.Errorf("volume %s's directory: %v", pv.Name, err)
	}

	// WaitForFirstConsumer: the claim nobody uses got the default class and no volume.
	notes, err := claims.Get(ctx, "notes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if notes.Status.Phase != corev1.ClaimPending || notes.Spec.VolumeName != "" || notes.Spec.StorageClassName == nil || *notes.Spec.StorageClassName != localplatform.StorageClassName {
		t.Errorf("claim notes: phase %s, volume %q, class %v; want Pending without a volume, class %s",
			notes.Status.Phase, notes.Spec.VolumeName, notes.Spec.StorageClassName, localplatform.StorageClassName)
	}
	if err := claims.Delete(ctx, "notes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("claim notes is deleted (its protection finalizer removed)", 30*time.Second, func(ctx context.Context) error {
		if _, err := claims.Get(ctx, "notes", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("claim notes still there: %v", err)
		}
		return nil
	})

	start = time.Now()
	if err := kube.AppsV1().StatefulSets("volumes").Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the StatefulSet's claim, then its volume, are deleted", 2*time.Minute, func(ctx context.Context) error {
		if _, err := claims.Get(ctx, "data-db-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("claim data-db-0 still there: %v", err)
		}
		v, err := kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			return fmt.Errorf("volume %s still there (%s)", pv.Name, v.Status.Phase)
		case !apierrors.IsNotFound(err):
			return err
		}
		return nil
	})
	t.Logf("claim and volume gone %s after the StatefulSet's deletion", time.Since(start).Round(time.Millisecond))
	if _, err := os.Stat(pv.Spec.HostPath.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("volume %s's directory is still there: %v", pv.Name, err)
	}
}
