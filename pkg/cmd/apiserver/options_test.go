package apiserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/plinth-dev/plinth/pkg/keyring"
)

// TestRefusedFlagsLeaveNoTrace runs the command as main does with --standalone and a flag
// validation refuses: the command must fail without creating the standalone credentials or
// the embedded etcd's data, which it used to write and start before validating.
func TestRefusedFlagsLeaveNoTrace(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := NewCommand(ctx, NewOptions(io.Discard))
	cmd.SetArgs([]string{
		"--standalone", "--standalone-dir", filepath.Join(dir, "standalone"), "--data-dir", filepath.Join(dir, "data"),
		"--bind-address", "127.0.0.1", "--secure-port", "70000",
	})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceErrors = true

	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "--secure-port 70000") {
		t.Fatalf("want the --secure-port refusal, got %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("refused flags left %s behind", e.Name())
	}
}

func TestValidate(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "keys.yaml")
	if err := keyring.EnsureFile(keyFile); err != nil {
		t.Fatal(err)
	}
	notKeys := filepath.Join(t.TempDir(), "not-keys.yaml")
	if err := os.WriteFile(notKeys, []byte("keys: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	etcd := []string{"--etcd-servers", "http://127.0.0.1:2379"}

	for _, tc := range []struct {
		name string
		args []string
		// want holds one substring per expected error; none means valid.
		want []string
	}{
		{name: "standalone with embedded etcd", args: []string{"--standalone", "--secure-port", "8443"}},
		{name: "delegated with external etcd", args: etcd},
		{name: "given key file", args: append([]string{"--encryption-key-file", keyFile}, etcd...)},
		{name: "no data dir but external etcd", args: append([]string{"--data-dir", ""}, etcd...)},
		{name: "port out of range", args: []string{"--secure-port", "70000"}, want: []string{"--secure-port 70000"}},
		{name: "standalone without a port", args: []string{"--standalone", "--secure-port", "0"}, want: []string{"--standalone needs a --secure-port"}},
		{name: "standalone without a dir", args: []string{"--standalone", "--standalone-dir", ""}, want: []string{"--standalone-dir must not be empty"}},
		{name: "embedded etcd without a data dir", args: []string{"--data-dir", ""}, want: []string{"--data-dir must not be empty"}},
		{
			// The embedded etcd's missing address is not an error, the rest of storage is checked.
			name: "embedded etcd, bad media type", args: []string{"--storage-media-type", "text/plain"},
			want: []string{"--storage-media-type"},
		},
		{name: "empty platform group", args: []string{"--platform-groups", "platform:admins,,x"}, want: []string{"--platform-groups must not contain an empty name"}},
		{name: "empty platform user", args: []string{"--platform-users", ","}, want: []string{"--platform-users must not contain an empty name"}},
		{name: "empty approver group", args: []string{"--approver-groups", "platform:approvers,"}, want: []string{"--approver-groups must not contain an empty name"}},
		{name: "graceful shutdown", args: append([]string{"--shutdown-delay-duration", "5s", "--shutdown-send-retry-after"}, etcd...)},
		{name: "negative shutdown delay", args: append([]string{"--shutdown-delay-duration", "-1s"}, etcd...), want: []string{"--shutdown-delay-duration -1s must not be negative"}},
		{name: "missing key file", args: []string{"--encryption-key-file", filepath.Join(t.TempDir(), "missing.yaml")}, want: []string{"--encryption-key-file"}},
		{name: "key file without keys", args: []string{"--standalone", "--encryption-key-file", notKeys}, want: []string{"--encryption-key-file"}},
		{
			name: "every problem at once", args: []string{"--standalone", "--secure-port", "0", "--standalone-dir", "", "--platform-users", ","},
			want: []string{"--standalone needs a --secure-port", "--standalone-dir must not be empty", "--platform-users must not contain an empty name"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Relative defaults (.plinth) would resolve here: nothing may appear in this dir.
			dir := t.TempDir()
			t.Chdir(dir)
			o := NewOptions(io.Discard)
			flags := pflag.NewFlagSet("plinth-apiserver", pflag.ContinueOnError)
			o.AddFlags(flags)
			if err := flags.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := o.Complete(); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if len(tc.want) == 0 && err != nil {
				t.Fatalf("want valid, got %v", err)
			}
			if len(tc.want) > 0 && err == nil {
				t.Fatalf("want errors %q, got none", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("want an error containing %q, got %v", w, err)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("Complete and Validate wrote %s", entries[0].Name())
			}
		})
	}
}

// TestAuthorizerRefusesTenantsWhateverRBACGrants builds the server's authorization chain from
// the flags, with an RBAC that grants everyone everything (a tenant bound to "*" on "*" in its
// namespace): the runtime's and the approvers' governance endpoints are still refused to the
// tenant, with the neutral text, while the identities the flags name are left to RBAC. The
// approval flow asks this chain for the verb approve.
func TestAuthorizerRefusesTenantsWhateverRBACGrants(t *testing.T) {
	everything := authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", nil
	})
	eve := &user.DefaultInfo{Name: "eve", Groups: []string{"system:authenticated"}}
	carol := &user.DefaultInfo{Name: "carol", Groups: []string{"system:authenticated", "platform:approvers"}}
	reviewer := &user.DefaultInfo{Name: "rita", Groups: []string{"system:authenticated", "release-reviewers"}}
	controller := &user.DefaultInfo{Name: "system:serviceaccount:plinth-system:plinth-controller"}
	request := func(u user.Info, verb, resource, sub string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, Namespace: "team-a", APIGroup: "governance.plinth.dev", APIVersion: "v1alpha1",
			Resource: resource, Subresource: sub, Name: "cache-1", ResourceRequest: true}
	}
	approve := func(u user.Info) authorizer.AttributesRecord {
		return request(u, "approve", "approvaltickets", "approval")
	}
	adopt := func(u user.Info) authorizer.AttributesRecord {
		return request(u, "create", "pendingadoptions", "adopt")
	}
	for _, tc := range []struct {
		args  []string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{nil, approve(eve), false},
		{nil, adopt(eve), false},
		{nil, request(eve, "update", "managedvms", "status"), false},
		{nil, request(eve, "patch", "systemservices", "status"), false},
		{nil, request(eve, "create", "approvaltickets", "approval"), true}, // cancelling her own
		{nil, request(eve, "get", "managedvms", "status"), true},
		{nil, approve(carol), true},
		{nil, adopt(carol), true},
		{nil, request(carol, "update", "managedvms", "status"), false},
		{nil, request(controller, "update", "managedvms", "status"), true},
		{nil, approve(reviewer), false},
		{[]string{"--approver-groups", "release-reviewers"}, approve(reviewer), true},
		{[]string{"--approver-groups", "release-reviewers"}, approve(carol), false},
	} {
		t.Run(fmt.Sprintf("%v %s %s/%s as %s", tc.args, tc.attrs.Verb, tc.attrs.Resource, tc.attrs.Subresource, tc.attrs.User.GetName()), func(t *testing.T) {
			o := NewOptions(io.Discard)
			flags := pflag.NewFlagSet("plinth-apiserver", pflag.ContinueOnError)
			o.AddFlags(flags)
			if err := flags.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			a, err := o.authorizer(everything)
			if err != nil {
				t.Fatal(err)
			}
			decision, reason, _ := a.Authorize(context.Background(), tc.attrs)
			if allowed := decision == authorizer.DecisionAllow; allowed != tc.allow {
				t.Fatalf("allowed = %v (%q), want %v", allowed, reason, tc.allow)
			}
			if !tc.allow && !strings.Contains(reason, "this API is reserved for platform operators") {
				t.Errorf("denied with %q, not the neutral text", reason)
			}
		})
	}
}
