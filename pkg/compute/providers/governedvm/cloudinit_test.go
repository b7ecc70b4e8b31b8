package governedvm

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
	gov "github.com/plinth-dev/plinth/pkg/apis/governance/v1alpha1"
)

// The user data is YAML that reads back as exactly the commands written, whatever the values:
// colons, quotes, newlines and shell characters stay strings of their own.
func TestUserDataReadsBackAsWritten(t *testing.T) {
	tc := tenant()
	web := &tc.Spec.Containers[0]
	web.Env = map[string]string{"QUOTE": `it's "x" & <y>`, "TIME": "10:20", "LINES": "a\nb", "EMPTY": ""}
	web.Command, web.Args = []string{"/bin/sh", "-c"}, []string{"echo $HOME; exit 0", "10:20", "yes", "0x10"}
	web.Resources = &v1alpha1.ResourceRequirements{CPU: 250, Memory: 128}
	web.HealthCheck = &v1alpha1.HealthCheckConfig{Type: "exec", Command: []string{"cat", "/tmp/ok"}, IntervalSeconds: 10, TimeoutSeconds: 2, UnhealthyThreshold: 5}
	web.Ports = append(web.Ports, v1alpha1.PortMapping{ContainerPort: 53, Protocol: "udp"})

	ud := userData(tc)
	if !strings.HasPrefix(ud, "#cloud-config\n") {
		t.Fatalf("not a cloud-config:\n%s", ud)
	}
	var doc struct {
		Packages []string   `json:"packages"`
		Runcmd   [][]string `json:"runcmd"`
	}
	if err := yaml.UnmarshalStrict([]byte(ud), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, ud)
	}
	want := []string{"podman", "run", "-d", "--name", "web", "--restart=always",
		"-p", "8080:80/tcp", "-p", "53:53/udp",
		"-e", "EMPTY=", "-e", "LINES=a\nb", "-e", `QUOTE=it's "x" & <y>`, "-e", "TIME=10:20",
		"--cpus=0.25", "--memory=128m",
		"--health-cmd", `["cat","/tmp/ok"]`, "--health-interval=10s", "--health-timeout=2s", "--health-retries=5", "--health-on-failure=restart",
		"--entrypoint", `["/bin/sh","-c"]`, "docker.io/library/nginx:1.27", "echo $HOME; exit 0", "10:20", "yes", "0x10"}
	if !slices.Equal(doc.Packages, []string{"podman"}) || len(doc.Runcmd) != 3 ||
		!slices.Equal(doc.Runcmd[0], []string{"systemctl", "enable", "podman-restart.service"}) || !slices.Equal(doc.Runcmd[1], want) {
		t.Errorf("read back %q", doc)
	}
	if names := containersIn(ud); len(names) != 2 || names["web"] == "" || names["worker"] == "" {
		t.Errorf("containers read back %v", names)
	}
}

func TestQualifiedImage(t *testing.T) {
	for in, want := range map[string]string{
		"nginx":                                  "docker.io/library/nginx",
		"nginx:1.27":                             "docker.io/library/nginx:1.27",
		"nginx@sha256:abc":                       "docker.io/library/nginx@sha256:abc",
		"bitnami/redis:7":                        "docker.io/bitnami/redis:7",
		"ghcr.io/acme/worker:2":                  "ghcr.io/acme/worker:2",
		"registry.example.com:5000/team/app:1.0": "registry.example.com:5000/team/app:1.0",
		"localhost/app":                          "localhost/app",
		"localhost:5000/app":                     "localhost:5000/app",
	} {
		if got := qualifiedImage(in); got != want {
			t.Errorf("%s → %s, want %s", in, got, want)
		}
	}
}

func TestWantMapsResources(t *testing.T) {
	for _, tc := range []struct {
		cpu, memory int32
		vcpus       int32
		mem         string
	}{
		{128, 128, 1, "128Mi"}, {1000, 1024, 1, "1Gi"}, {1001, 1536, 2, "1536Mi"}, {2500, 4096, 3, "4Gi"},
	} {
		obj := tenant()
		obj.Spec.Resources = v1alpha1.ResourceRequirements{CPU: tc.cpu, Memory: tc.memory}
		w, err := want(obj)
		if err != nil {
			t.Fatal(err)
		}
		if w.spec.Resources.CPU != tc.vcpus || w.spec.Resources.Memory.String() != tc.mem {
			t.Errorf("%d millicores, %d MB → %d vCPU, %s", tc.cpu, tc.memory, w.spec.Resources.CPU, w.spec.Resources.Memory.String())
		}
	}
	obj := tenant()
	a, _ := want(obj)
	obj.Spec.Containers[1].Args = []string{"--queue", "refunds"}
	b, _ := want(obj)
	obj.Spec.Labels = map[string]string{"other": "label"}
	c, _ := want(obj)
	if a.fingerprint == b.fingerprint || b.fingerprint != c.fingerprint {
		t.Error("the fingerprint follows the governed fields only")
	}
}

func TestChangesOf(t *testing.T) {
	obj := tenant()
	a, _ := want(obj)
	obj.Spec.Containers[0].Env["MODE"] = "test"
	obj.Spec.Containers = append(obj.Spec.Containers[:1], v1alpha1.ContainerSpec{Name: "cron", Image: "busybox"})
	obj.Spec.Resources.CPU = 3000
	b, _ := want(obj)
	got := changesOf(a.spec, b.spec)
	if strings.Join(got, ",") != "size: 2 vCPU, 512Mi → 3 vCPU, 512Mi,container cron: added,container web: changed,container worker: removed" {
		t.Errorf("changes %q", got)
	}
	other := a.spec
	other.CloudInit += "# more\n"
	other.Image = "quay.io/containerdisks/ubuntu:24.04"
	if got := changesOf(a.spec, other); strings.Join(got, ",") != "image: "+DefaultImage+" → quay.io/containerdisks/ubuntu:24.04,cloud-init: changed" {
		t.Errorf("changes %q", got)
	}
	if !needsRestart(a.spec, b.spec) {
		t.Error("a new cloud-init and size need a restart")
	}
	halted := a.spec
	halted.RunStrategy = gov.RunStrategyHalted
	if needsRestart(a.spec, halted) {
		t.Error("stopping needs no restart")
	}
}
