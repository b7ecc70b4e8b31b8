package governedvm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute/v1alpha1"
)

func TestValidate(t *testing.T) {
	p := newFixture(t).p
	for _, tc := range []struct {
		name   string
		change func(tc *v1alpha1.TenantCompute)
		want   []string // parts of the message; none: valid
	}{
		{"valid", func(*v1alpha1.TenantCompute) {}, nil},
		{"exec health check", func(tc *v1alpha1.TenantCompute) {
			tc.Spec.Containers[0].HealthCheck = &v1alpha1.HealthCheckConfig{Type: "exec", Command: []string{"true"}, IntervalSeconds: 10, TimeoutSeconds: 1}
		}, nil},
		{"tenant ID at the limit", func(tc *v1alpha1.TenantCompute) { tc.Spec.TenantID = "abcdefghijklmno" }, nil},
		{"tenant ID too long for the VM's name", func(tc *v1alpha1.TenantCompute) { tc.Spec.TenantID = "abcdefghijklmnop" },
			[]string{`spec.tenantID "abcdefghijklmnop"`, "at most 15 characters"}},
		{"tenant ID not a DNS label", func(tc *v1alpha1.TenantCompute) { tc.Spec.TenantID = "-shop" }, []string{"spec.tenantID"}},
		{"namespace too long", func(tc *v1alpha1.TenantCompute) { tc.Namespace = "a-long-namespace" }, []string{`namespace "a-long-namespace"`}},
		{"secrets", func(tc *v1alpha1.TenantCompute) {
			tc.Spec.Secrets = []v1alpha1.SecretReference{{Name: "db", Source: "kubernetes-secret", Key: "password"}}
		}, []string{"spec.secrets"}},
		{"public IP", func(tc *v1alpha1.TenantCompute) { tc.Spec.Networking.PublicIP = true }, []string{"spec.networking.publicIP"}},
		{"DNS", func(tc *v1alpha1.TenantCompute) { tc.Spec.Networking.DNS = &v1alpha1.DNSConfig{Hostname: "shop"} }, []string{"spec.networking.dns"}},
		{"storage", func(tc *v1alpha1.TenantCompute) { tc.Spec.Resources.Storage = 1024 }, []string{"spec.resources.storage"}},
		{"http health check", func(tc *v1alpha1.TenantCompute) {
			tc.Spec.Containers[0].HealthCheck = &v1alpha1.HealthCheckConfig{Type: "http", HTTPPath: "/", Port: 80, IntervalSeconds: 10, TimeoutSeconds: 1}
		}, []string{"container web: http health checks"}},
		{"one host port twice", func(tc *v1alpha1.TenantCompute) {
			tc.Spec.Containers[1].Ports = []v1alpha1.PortMapping{{ContainerPort: 8080, Protocol: "tcp"}}
		}, []string{"containers web and worker both publish host port 8080/tcp"}},
		{"same port, other protocol", func(tc *v1alpha1.TenantCompute) {
			tc.Spec.Containers[1].Ports = []v1alpha1.PortMapping{{ContainerPort: 8080, Protocol: "udp"}}
		}, nil},
		{"unknown config field", func(tc *v1alpha1.TenantCompute) {
			tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`{"cluster":"local"}`)}
		}, []string{"spec.providerConfig"}},
		{"containers beyond the cloud-init limit", func(tc *v1alpha1.TenantCompute) {
			tc.Spec.Containers[0].Env = map[string]string{}
			for i := range 40 {
				tc.Spec.Containers[0].Env[fmt.Sprintf("SETTING_%02d", i)] = strings.Repeat("v", 40)
			}
		}, []string{"bytes of cloud-init", "2048"}},
		{"several problems at once", func(tc *v1alpha1.TenantCompute) {
			tc.Spec.TenantID = "a-very-long-tenant"
			tc.Spec.Networking.PublicIP = true
		}, []string{"spec.tenantID", "; spec.networking.publicIP"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tenant()
			tc.change(obj)
			err := p.Validate(context.Background(), obj)
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, part := range tc.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("%q does not say %q", err, part)
				}
			}
		})
	}
}

func TestDescriptor(t *testing.T) {
	d := newFixture(t).p.Descriptor()
	var schema map[string]any
	if err := json.Unmarshal(d.ConfigSchema, &schema); err != nil || schema["additionalProperties"] != false {
		t.Errorf("schema %s: %v", d.ConfigSchema, err)
	}
	if _, hasCluster := schema["properties"].(map[string]any)["cluster"]; hasCluster {
		t.Error("the schema offers a cluster; the approver chooses it")
	}
	var defaults config
	if err := json.Unmarshal(d.ConfigDefaults, &defaults); err != nil || defaults.Image != DefaultImage {
		t.Errorf("defaults %s: %v", d.ConfigDefaults, err)
	}
	if len(d.SecretSources) != 0 || d.PublicIP || strings.Join(d.HealthChecks, ",") != "exec" {
		t.Errorf("supports %+v", d)
	}
}
