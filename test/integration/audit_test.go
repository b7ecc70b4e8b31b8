package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/plinth-dev/plinth/internal/localplatform"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
	platform "github.com/plinth-dev/plinth/pkg/apis/platform/v1alpha1"
	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientset "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

// TestAuditLog runs plinth-apiserver with the audit policy of artifacts/deploy on the local
// platform, registers a Cluster (with a kubeconfig), asks for a ManagedVM, approves its ticket
// as carol and creates a Workload, then reads the audit log: the decision is recorded with its
// request and response, the other writes too, every Cluster request at Metadata without a
// body, and the kubeconfig's key material in no form anywhere in the log.
func TestAuditLog(t *testing.T) {
	p := framework.StartLocalPlatform(t)
	ctx := context.Background()
	clientFor := func(user string) clientset.Interface {
		cfg, err := p.ConfigFor(user)
		if err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(cfg)
	}
	alice, carol, dana := clientFor("alice"), clientFor("carol"), clientFor("dana")
	const ns = "team-a"

	kubeconfig, err := p.TargetKubeconfig(p.KubeURL())
	if err != nil {
		t.Fatal(err)
	}
	cluster := &platform.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "audited"},
		Spec: platform.ClusterSpec{Description: "Registered to be audited.", Kubeconfig: string(kubeconfig)}}
	if _, err := dana.PlatformV1alpha1().Clusters().Create(ctx, cluster, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A merge patch that sends the kubeconfig again: the body of a patch is logged as the
	// request object at Request level and above.
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"kubeconfig": string(kubeconfig)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dana.PlatformV1alpha1().Clusters().Patch(ctx, "audited", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	if _, err := alice.GovernanceV1alpha1().Systems(ns).Create(ctx, &gov.System{ObjectMeta: metav1.ObjectMeta{Name: "audit"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.GovernanceV1alpha1().SystemServices(ns).Create(ctx, &gov.SystemService{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: gov.SystemServiceSpec{SystemRef: gov.LocalObjectReference{Name: "audit"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.GovernanceV1alpha1().ManagedVMs(ns).Create(ctx, &gov.ManagedVM{ObjectMeta: metav1.ObjectMeta{Name: "ledger"},
		Spec: gov.ManagedVMSpec{SystemServiceRef: gov.LocalObjectReference{Name: "db"}, InstanceType: "u1.small",
			Image: "quay.io/containerdisks/fedora:40", Reason: "audited request"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vm, err := alice.GovernanceV1alpha1().ManagedVMs(ns).Get(ctx, "ledger", metav1.GetOptions{})
	if err != nil || vm.Status.PendingApproval == nil {
		t.Fatalf("no pending request: %+v %v", vm, err)
	}
	ticket := vm.Status.PendingApproval.Ticket
	if _, err := carol.GovernanceV1alpha1().ApprovalTickets(ns).Decide(ctx, ticket, &gov.TicketDecision{Decision: gov.DecisionApprove,
		Comment: "capacity checked", Cluster: localplatform.LocalCluster}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("approving %s: %v", ticket, err)
	}
	workload := &v1b1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "audited"}, Spec: v1b1.WorkloadSpec{
		Containers: map[string]v1b1.Container{"main": {Image: "registry.example.com/web:1.0", Variables: map[string]string{"GREETING": "audited"}}}}}
	if _, err := alice.ScoreV1b1().Workloads(ns).Create(ctx, workload, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The log backend writes an event when its stage ends, after the response has gone out:
	// wait for the last write's.
	var log []byte
	var events []auditv1.Event
	waitForCondition(t, 30*time.Second, func() (bool, string) {
		log, events = readAuditLog(t, p.AuditLogPath())
		return findEvent(events, "alice", "create", "workloads", "", "audited") != nil, fmt.Sprintf("%d events", len(events))
	})

	t.Run("the decision is recorded with its request and the ticket it left", func(t *testing.T) {
		e := findEvent(events, "carol", "create", "approvaltickets", "approval", ticket)
		if e == nil {
			t.Fatal("no event for carol's approval")
		}
		if e.Level != auditv1.LevelRequestResponse || e.RequestObject == nil || e.ResponseObject == nil || e.ResponseStatus == nil || e.ResponseStatus.Code/100 != 2 {
			t.Fatalf("approval event: level %s, request %v, response %v, status %+v", e.Level, e.RequestObject != nil, e.ResponseObject != nil, e.ResponseStatus)
		}
		var decision gov.TicketDecision
		if err := json.Unmarshal(e.RequestObject.Raw, &decision); err != nil || decision.Decision != gov.DecisionApprove ||
			decision.Comment != "capacity checked" || decision.Cluster != localplatform.LocalCluster {
			t.Errorf("request object %s (%v)", e.RequestObject.Raw, err)
		}
		var decided gov.ApprovalTicket
		if err := json.Unmarshal(e.ResponseObject.Raw, &decided); err != nil || len(decided.Status.Decisions) != 1 ||
			decided.Status.Decisions[0].User != "carol" || decided.Status.Decisions[0].Decision != gov.DecisionApprove || decided.Status.State == gov.TicketPending {
			t.Errorf("response object %s (%v)", e.ResponseObject.Raw, err)
		}
	})

	t.Run("the VM request and the Workload are recorded with their bodies", func(t *testing.T) {
		for _, e := range []*auditv1.Event{findEvent(events, "alice", "create", "managedvms", "", "ledger"), findEvent(events, "alice", "create", "workloads", "", "audited")} {
			if e == nil {
				t.Fatal("a write is missing from the log")
			}
			if e.Level != auditv1.LevelRequestResponse || e.RequestObject == nil || e.ResponseObject == nil {
				t.Errorf("%s %s: level %s, request %v, response %v", e.Verb, e.ObjectRef.Resource, e.Level, e.RequestObject != nil, e.ResponseObject != nil)
			}
		}
		if e := findEvent(events, "alice", "create", "managedvms", "", "ledger"); e != nil && !bytes.Contains(e.RequestObject.Raw, []byte("audited request")) {
			t.Errorf("the VM request's body is not the request: %s", e.RequestObject.Raw)
		}
	})

	t.Run("every Cluster request is at Metadata, without a body", func(t *testing.T) {
		for _, want := range [][2]string{{"dana", "create"}, {"dana", "patch"}} {
			if findEvent(events, want[0], want[1], "clusters", "", "audited") == nil {
				t.Errorf("no event for %s's %s of Cluster audited", want[0], want[1])
			}
		}
		seen := 0
		for _, e := range events {
			if e.ObjectRef == nil || e.ObjectRef.APIGroup != platform.GroupName || e.ObjectRef.Resource != "clusters" {
				continue
			}
			seen++
			if e.Level != auditv1.LevelMetadata || e.RequestObject != nil || e.ResponseObject != nil {
				t.Errorf("%s %s clusters/%s %s by %s: level %s, request %v, response %v", e.Stage, e.Verb, e.ObjectRef.Subresource, e.ObjectRef.Name,
					e.User.Username, e.Level, e.RequestObject != nil, e.ResponseObject != nil)
			}
		}
		// The platform's registration of Cluster local, the controller's credential reads and
		// status reports, dana's writes.
		if seen < 4 {
			t.Errorf("only %d Cluster events", seen)
		}
	})

	t.Run("the kubeconfig's key material is nowhere in the log", func(t *testing.T) {
		keyPEM, err := os.ReadFile(filepath.Join(p.PKIDir(), "plinth-target.key"))
		if err != nil {
			t.Fatal(err)
		}
		// The key's PEM body line by line (a JSON string would escape the line breaks), the
		// kubeconfig's base64 of the PEM (client-key-data), and the base64 of the whole
		// kubeconfig, as a []byte field would be serialized.
		pemLines := strings.Split(string(keyPEM), "\n")
		encodedKey := base64.StdEncoding.EncodeToString(keyPEM)
		encodedKubeconfig := base64.StdEncoding.EncodeToString(kubeconfig)
		forms := map[string]string{
			"the PEM key's first line":           pemLines[1][:48],
			"the PEM key's second line":          pemLines[2][:48],
			"the PEM key's header":               "PRIVATE KEY",
			"client-key-data's base64":           encodedKey[:64],
			"client-key-data's base64, further":  encodedKey[len(encodedKey)/2 : len(encodedKey)/2+48],
			"the kubeconfig's field name":        "client-key-data",
			"the whole kubeconfig in base64":     encodedKubeconfig[:64],
			"the kubeconfig's middle, in base64": encodedKubeconfig[len(encodedKubeconfig)/2/4*4 : len(encodedKubeconfig)/2/4*4+64],
		}
		if !bytes.Contains(kubeconfig, []byte(encodedKey[:64])) {
			t.Fatal("the test's kubeconfig does not carry the key as client-key-data: the search below would prove nothing")
		}
		for what, secret := range forms {
			if bytes.Contains(log, []byte(secret)) {
				t.Errorf("the audit log contains %s", what)
			}
		}
	})

	t.Run("RequestReceived and managed fields are left out", func(t *testing.T) {
		for _, e := range events {
			if e.Stage == auditv1.StageRequestReceived {
				t.Fatalf("a RequestReceived event: %s %s", e.Verb, e.RequestURI)
			}
		}
		if bytes.Contains(log, []byte(`"managedFields"`)) {
			t.Error("managed fields in the log")
		}
	})

	// What docs/reliability.md reports: events and bytes per level.
	perLevel := map[auditv1.Level][2]int{}
	for _, e := range events {
		data, _ := json.Marshal(e)
		n := perLevel[e.Level]
		perLevel[e.Level] = [2]int{n[0] + 1, n[1] + len(data) + 1}
	}
	var levels []string
	for level, n := range perLevel {
		levels = append(levels, fmt.Sprintf("%s: %d events, %d bytes each on average", level, n[0], n[1]/n[0]))
	}
	sort.Strings(levels)
	t.Logf("audit log: %d bytes, %d events; %s", len(log), len(events), strings.Join(levels, "; "))
}

// readAuditLog reads the log backend's file: one JSON event per line.
func readAuditLog(t *testing.T, path string) ([]byte, []auditv1.Event) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	var events []auditv1.Event
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			// The last line may be half written.
			continue
		}
		events = append(events, e)
	}
	return data, events
}

// findEvent is the ResponseComplete event of a user's request on a resource's object.
func findEvent(events []auditv1.Event, user, verb, resource, subresource, name string) *auditv1.Event {
	for i, e := range events {
		if e.Stage == auditv1.StageResponseComplete && e.User.Username == user && e.Verb == verb && e.ObjectRef != nil &&
			e.ObjectRef.Resource == resource && e.ObjectRef.Subresource == subresource && e.ObjectRef.Name == name {
			return &events[i]
		}
	}
	return nil
}
