package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/plinth-dev/plinth/pkg/apis/common"
	"github.com/plinth-dev/plinth/pkg/apis/compute"
)

// tenant is a valid TenantCompute using every part of the spec.
func tenant() *compute.TenantCompute {
	return &compute.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "team-a", ResourceVersion: "1"},
		Spec: compute.TenantComputeSpec{
			TenantID:     "acme-shop",
			ProviderType: "kubernetes",
			Containers: []compute.ContainerSpec{{
				Name:    "web",
				Image:   "registry.example.com:5000/shop/web:1.4",
				Command: []string{"/bin/web"},
				Env:     map[string]string{"LOG_LEVEL": "info"},
				Ports:   []compute.PortMapping{{ContainerPort: 8080, HostPort: 80, Protocol: "tcp", Name: "http"}},
				HealthCheck: &compute.HealthCheckConfig{Type: "http", HTTPPath: "/healthz", Port: 8080,
					IntervalSeconds: 10, TimeoutSeconds: 2, HealthyThreshold: 1, UnhealthyThreshold: 3},
				Resources: &compute.ResourceRequirements{CPU: 250, Memory: 256},
			}, {
				Name:        "worker",
				Image:       "nginx",
				HealthCheck: &compute.HealthCheckConfig{Type: "exec", Command: []string{"true"}, IntervalSeconds: 5, TimeoutSeconds: 1},
			}},
			Resources:  compute.ResourceRequirements{CPU: 500, Memory: 512, Storage: 1024},
			Networking: compute.NetworkConfig{PublicIP: true, DNS: &compute.DNSConfig{Hostname: "shop", Domain: "tenants.example.com"}},
			Secrets: []compute.SecretReference{
				{Name: "db", Source: "kubernetes-secret", Key: "password", EnvVar: "DB_PASSWORD"},
				{Name: "api", Source: "kubernetes-secret", Key: "token"},
			},
			Labels:         map[string]string{"team": "a"},
			ProviderConfig: &common.RawObject{Raw: []byte(`{"replicas":2}`)},
		},
	}
}

type wantErr struct {
	field string
	typ   field.ErrorType
}

// expectOne fails unless errs is exactly one error on want.field of want.typ.
func expectOne(t *testing.T, name string, errs field.ErrorList, want wantErr) {
	t.Helper()
	if len(errs) != 1 || errs[0].Field != want.field || errs[0].Type != want.typ {
		t.Errorf("%s: got %v, want one %s error on %s", name, errs, want.typ, want.field)
	}
}

func TestValidTenantCompute(t *testing.T) {
	if errs := ValidateTenantCompute(tenant()); len(errs) > 0 {
		t.Fatalf("valid tenant: %v", errs)
	}
	// The least a tenant needs: an ID, a provider, one container with an image, resources.
	minimal := &compute.TenantCompute{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "team-a"},
		Spec: compute.TenantComputeSpec{TenantID: "m", ProviderType: "kubevirt",
			Containers: []compute.ContainerSpec{{Name: "a", Image: "busybox@sha256:" + strings.Repeat("a", 64)}},
			Resources:  compute.ResourceRequirements{CPU: 128, Memory: 128}},
	}
	if errs := ValidateTenantCompute(minimal); len(errs) > 0 {
		t.Fatalf("minimal tenant: %v", errs)
	}
}

// TestTenantComputeRules covers every rule of the seed's "Validation Rules" and Plinth's
// additions, each with the field path and error type the refusal names.
func TestTenantComputeRules(t *testing.T) {
	web := func(tc *compute.TenantCompute) *compute.ContainerSpec { return &tc.Spec.Containers[0] }
	cases := map[string]struct {
		mutate func(*compute.TenantCompute)
		want   wantErr
	}{
		// metadata
		"name not a DNS label": {func(tc *compute.TenantCompute) { tc.Name = "Shop" }, wantErr{"metadata.name", field.ErrorTypeInvalid}},
		"no namespace":         {func(tc *compute.TenantCompute) { tc.Namespace = "" }, wantErr{"metadata.namespace", field.ErrorTypeRequired}},

		// TenantID MUST be non-empty and match ^[a-z0-9-]+$
		"tenantID empty":     {func(tc *compute.TenantCompute) { tc.Spec.TenantID = "" }, wantErr{"spec.tenantID", field.ErrorTypeRequired}},
		"tenantID uppercase": {func(tc *compute.TenantCompute) { tc.Spec.TenantID = "Acme" }, wantErr{"spec.tenantID", field.ErrorTypeInvalid}},
		"tenantID with dot":  {func(tc *compute.TenantCompute) { tc.Spec.TenantID = "acme.shop" }, wantErr{"spec.tenantID", field.ErrorTypeInvalid}},
		"tenantID with _":    {func(tc *compute.TenantCompute) { tc.Spec.TenantID = "acme_shop" }, wantErr{"spec.tenantID", field.ErrorTypeInvalid}},
		// ... and names the namespace tenant-<tenantID>
		"tenantID too long":     {func(tc *compute.TenantCompute) { tc.Spec.TenantID = strings.Repeat("a", 57) }, wantErr{"spec.tenantID", field.ErrorTypeTooLong}},
		"tenantID trailing '-'": {func(tc *compute.TenantCompute) { tc.Spec.TenantID = "acme-" }, wantErr{"spec.tenantID", field.ErrorTypeInvalid}},
		"tenantID leading '-'":  {func(tc *compute.TenantCompute) { tc.Spec.TenantID = "-acme" }, wantErr{"spec.tenantID", field.ErrorTypeInvalid}},

		// ProviderType MUST be non-empty
		"providerType empty":     {func(tc *compute.TenantCompute) { tc.Spec.ProviderType = "" }, wantErr{"spec.providerType", field.ErrorTypeRequired}},
		"providerType not label": {func(tc *compute.TenantCompute) { tc.Spec.ProviderType = "Docker" }, wantErr{"spec.providerType", field.ErrorTypeInvalid}},

		// Containers MUST have at least one container, names unique
		"no containers": {func(tc *compute.TenantCompute) { tc.Spec.Containers = nil }, wantErr{"spec.containers", field.ErrorTypeRequired}},
		"duplicate container name": {func(tc *compute.TenantCompute) { tc.Spec.Containers[1].Name = "web" },
			wantErr{"spec.containers[1].name", field.ErrorTypeDuplicate}},

		// ContainerSpec.Name MUST match ^[a-z0-9-]+$
		"container name empty":     {func(tc *compute.TenantCompute) { web(tc).Name = "" }, wantErr{"spec.containers[0].name", field.ErrorTypeRequired}},
		"container name uppercase": {func(tc *compute.TenantCompute) { web(tc).Name = "Web" }, wantErr{"spec.containers[0].name", field.ErrorTypeInvalid}},
		"container name with _":    {func(tc *compute.TenantCompute) { web(tc).Name = "web_1" }, wantErr{"spec.containers[0].name", field.ErrorTypeInvalid}},
		"container name too long":  {func(tc *compute.TenantCompute) { web(tc).Name = strings.Repeat("w", 64) }, wantErr{"spec.containers[0].name", field.ErrorTypeInvalid}},
		"container name '-' end":   {func(tc *compute.TenantCompute) { web(tc).Name = "web-" }, wantErr{"spec.containers[0].name", field.ErrorTypeInvalid}},

		// Image MUST be a valid image reference
		"image empty":           {func(tc *compute.TenantCompute) { web(tc).Image = "" }, wantErr{"spec.containers[0].image", field.ErrorTypeRequired}},
		"image with space":      {func(tc *compute.TenantCompute) { web(tc).Image = "nginx :1" }, wantErr{"spec.containers[0].image", field.ErrorTypeInvalid}},
		"image uppercase repo":  {func(tc *compute.TenantCompute) { web(tc).Image = "Nginx" }, wantErr{"spec.containers[0].image", field.ErrorTypeInvalid}},
		"image empty tag":       {func(tc *compute.TenantCompute) { web(tc).Image = "nginx:" }, wantErr{"spec.containers[0].image", field.ErrorTypeInvalid}},
		"image bad digest":      {func(tc *compute.TenantCompute) { web(tc).Image = "nginx@sha256:abc" }, wantErr{"spec.containers[0].image", field.ErrorTypeInvalid}},
		"image double slash":    {func(tc *compute.TenantCompute) { web(tc).Image = "example.com//nginx" }, wantErr{"spec.containers[0].image", field.ErrorTypeInvalid}},
		"image trailing colon2": {func(tc *compute.TenantCompute) { web(tc).Image = "nginx:1.0:2" }, wantErr{"spec.containers[0].image", field.ErrorTypeInvalid}},

		// Env names are C identifiers
		"env name with '-'": {func(tc *compute.TenantCompute) { web(tc).Env = map[string]string{"LOG-LEVEL": "x"} }, wantErr{"spec.containers[0].env[LOG-LEVEL]", field.ErrorTypeInvalid}},
		"env name digit":    {func(tc *compute.TenantCompute) { web(tc).Env = map[string]string{"1X": "x"} }, wantErr{"spec.containers[0].env[1X]", field.ErrorTypeInvalid}},

		// Ports[].ContainerPort MUST be 1-65535, Protocol tcp or udp
		"containerPort 0":     {func(tc *compute.TenantCompute) { web(tc).Ports[0].ContainerPort = 0 }, wantErr{"spec.containers[0].ports[0].containerPort", field.ErrorTypeRequired}},
		"containerPort 65536": {func(tc *compute.TenantCompute) { web(tc).Ports[0].ContainerPort = 65536 }, wantErr{"spec.containers[0].ports[0].containerPort", field.ErrorTypeInvalid}},
		"containerPort -1":    {func(tc *compute.TenantCompute) { web(tc).Ports[0].ContainerPort = -1 }, wantErr{"spec.containers[0].ports[0].containerPort", field.ErrorTypeInvalid}},
		"hostPort 70000":      {func(tc *compute.TenantCompute) { web(tc).Ports[0].HostPort = 70000 }, wantErr{"spec.containers[0].ports[0].hostPort", field.ErrorTypeInvalid}},
		"protocol sctp":       {func(tc *compute.TenantCompute) { web(tc).Ports[0].Protocol = "sctp" }, wantErr{"spec.containers[0].ports[0].protocol", field.ErrorTypeNotSupported}},
		"protocol upper TCP":  {func(tc *compute.TenantCompute) { web(tc).Ports[0].Protocol = "TCP" }, wantErr{"spec.containers[0].ports[0].protocol", field.ErrorTypeNotSupported}},
		"protocol missing":    {func(tc *compute.TenantCompute) { web(tc).Ports[0].Protocol = "" }, wantErr{"spec.containers[0].ports[0].protocol", field.ErrorTypeRequired}},
		"port name invalid":   {func(tc *compute.TenantCompute) { web(tc).Ports[0].Name = "http_1" }, wantErr{"spec.containers[0].ports[0].name", field.ErrorTypeInvalid}},
		"port name duplicated": {func(tc *compute.TenantCompute) {
			web(tc).Ports = append(web(tc).Ports, compute.PortMapping{ContainerPort: 9090, Protocol: "udp", Name: "http"})
		}, wantErr{"spec.containers[0].ports[1].name", field.ErrorTypeDuplicate}},

		// ResourceRequirements: CPU >= 128, Memory >= 128, for the tenant and each container
		"cpu 127":                 {func(tc *compute.TenantCompute) { tc.Spec.Resources.CPU = 127 }, wantErr{"spec.resources.cpu", field.ErrorTypeInvalid}},
		"memory 127":              {func(tc *compute.TenantCompute) { tc.Spec.Resources.Memory = 127 }, wantErr{"spec.resources.memory", field.ErrorTypeInvalid}},
		"storage negative":        {func(tc *compute.TenantCompute) { tc.Spec.Resources.Storage = -1 }, wantErr{"spec.resources.storage", field.ErrorTypeInvalid}},
		"container cpu 100":       {func(tc *compute.TenantCompute) { web(tc).Resources.CPU = 100 }, wantErr{"spec.containers[0].resources.cpu", field.ErrorTypeInvalid}},
		"container memory 64":     {func(tc *compute.TenantCompute) { web(tc).Resources.Memory = 64 }, wantErr{"spec.containers[0].resources.memory", field.ErrorTypeInvalid}},
		"container storage -5":    {func(tc *compute.TenantCompute) { web(tc).Resources.Storage = -5 }, wantErr{"spec.containers[0].resources.storage", field.ErrorTypeInvalid}},
		"tenant resources absent": {func(tc *compute.TenantCompute) { tc.Spec.Resources = compute.ResourceRequirements{CPU: 128} }, wantErr{"spec.resources.memory", field.ErrorTypeInvalid}},

		// HealthCheckConfig: type http|tcp|exec, interval >= 5, timeout >= 1 and < interval
		"health type grpc":    {func(tc *compute.TenantCompute) { web(tc).HealthCheck.Type = "grpc" }, wantErr{"spec.containers[0].healthCheck.type", field.ErrorTypeNotSupported}},
		"health type missing": {func(tc *compute.TenantCompute) { web(tc).HealthCheck.Type = "" }, wantErr{"spec.containers[0].healthCheck.type", field.ErrorTypeRequired}},
		"interval 4": {func(tc *compute.TenantCompute) {
			web(tc).HealthCheck.IntervalSeconds = 4
			web(tc).HealthCheck.TimeoutSeconds = 1
		}, wantErr{"spec.containers[0].healthCheck.intervalSeconds", field.ErrorTypeInvalid}},
		"timeout 0":          {func(tc *compute.TenantCompute) { web(tc).HealthCheck.TimeoutSeconds = 0 }, wantErr{"spec.containers[0].healthCheck.timeoutSeconds", field.ErrorTypeInvalid}},
		"timeout = interval": {func(tc *compute.TenantCompute) { web(tc).HealthCheck.TimeoutSeconds = 10 }, wantErr{"spec.containers[0].healthCheck.timeoutSeconds", field.ErrorTypeInvalid}},
		"timeout > interval": {func(tc *compute.TenantCompute) { web(tc).HealthCheck.TimeoutSeconds = 30 }, wantErr{"spec.containers[0].healthCheck.timeoutSeconds", field.ErrorTypeInvalid}},
		"http without path":  {func(tc *compute.TenantCompute) { web(tc).HealthCheck.HTTPPath = "" }, wantErr{"spec.containers[0].healthCheck.httpPath", field.ErrorTypeRequired}},
		"http relative path": {func(tc *compute.TenantCompute) { web(tc).HealthCheck.HTTPPath = "healthz" }, wantErr{"spec.containers[0].healthCheck.httpPath", field.ErrorTypeInvalid}},
		"http without port":  {func(tc *compute.TenantCompute) { web(tc).HealthCheck.Port = 0 }, wantErr{"spec.containers[0].healthCheck.port", field.ErrorTypeRequired}},
		"tcp without port": {func(tc *compute.TenantCompute) {
			web(tc).HealthCheck = &compute.HealthCheckConfig{Type: "tcp", IntervalSeconds: 5, TimeoutSeconds: 1}
		}, wantErr{"spec.containers[0].healthCheck.port", field.ErrorTypeRequired}},
		"exec without command": {func(tc *compute.TenantCompute) { tc.Spec.Containers[1].HealthCheck.Command = nil }, wantErr{"spec.containers[1].healthCheck.command", field.ErrorTypeRequired}},
		"healthyThreshold -1":  {func(tc *compute.TenantCompute) { web(tc).HealthCheck.HealthyThreshold = -1 }, wantErr{"spec.containers[0].healthCheck.healthyThreshold", field.ErrorTypeInvalid}},
		"unhealthyThreshold -1": {func(tc *compute.TenantCompute) { web(tc).HealthCheck.UnhealthyThreshold = -1 },
			wantErr{"spec.containers[0].healthCheck.unhealthyThreshold", field.ErrorTypeInvalid}},

		// Secrets: name, source and key required, names unique, envVar a C identifier
		"secret without name":   {func(tc *compute.TenantCompute) { tc.Spec.Secrets[0].Name = "" }, wantErr{"spec.secrets[0].name", field.ErrorTypeRequired}},
		"secret without source": {func(tc *compute.TenantCompute) { tc.Spec.Secrets[0].Source = "" }, wantErr{"spec.secrets[0].source", field.ErrorTypeRequired}},
		"secret without key":    {func(tc *compute.TenantCompute) { tc.Spec.Secrets[0].Key = "" }, wantErr{"spec.secrets[0].key", field.ErrorTypeRequired}},
		"secret name repeated":  {func(tc *compute.TenantCompute) { tc.Spec.Secrets[1].Name = "db" }, wantErr{"spec.secrets[1].name", field.ErrorTypeDuplicate}},
		"secret envVar invalid": {func(tc *compute.TenantCompute) { tc.Spec.Secrets[0].EnvVar = "DB-PASSWORD" }, wantErr{"spec.secrets[0].envVar", field.ErrorTypeInvalid}},
		"secret envVar repeated": {func(tc *compute.TenantCompute) { tc.Spec.Secrets[1].EnvVar = "DB_PASSWORD" },
			wantErr{"spec.secrets[1].envVar", field.ErrorTypeDuplicate}},

		// Networking
		"dns hostname invalid": {func(tc *compute.TenantCompute) { tc.Spec.Networking.DNS.Hostname = "Shop" }, wantErr{"spec.networking.dns.hostname", field.ErrorTypeInvalid}},
		"dns domain invalid":   {func(tc *compute.TenantCompute) { tc.Spec.Networking.DNS.Domain = "example..com" }, wantErr{"spec.networking.dns.domain", field.ErrorTypeInvalid}},
		"dns name too long": {func(tc *compute.TenantCompute) {
			tc.Spec.Networking.DNS.Domain = strings.Repeat(strings.Repeat("d", 60)+".", 4) + "example" // 251 characters
		}, wantErr{"spec.networking.dns", field.ErrorTypeInvalid}},

		// Labels and providerConfig
		"label key invalid":        {func(tc *compute.TenantCompute) { tc.Spec.Labels = map[string]string{"bad key": "x"} }, wantErr{"spec.labels", field.ErrorTypeInvalid}},
		"label value invalid":      {func(tc *compute.TenantCompute) { tc.Spec.Labels = map[string]string{"team": "a b"} }, wantErr{"spec.labels", field.ErrorTypeInvalid}},
		"providerConfig an array":  {func(tc *compute.TenantCompute) { tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`[1]`)} }, wantErr{"spec.providerConfig", field.ErrorTypeInvalid}},
		"providerConfig a string":  {func(tc *compute.TenantCompute) { tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`"x"`)} }, wantErr{"spec.providerConfig", field.ErrorTypeInvalid}},
		"providerConfig not JSON":  {func(tc *compute.TenantCompute) { tc.Spec.ProviderConfig = &common.RawObject{Raw: []byte(`{x`)} }, wantErr{"spec.providerConfig", field.ErrorTypeInvalid}},
		"label key with prefix ok": {func(tc *compute.TenantCompute) { tc.Spec.Labels = map[string]string{"example.com/team": "a"} }, wantErr{}},
	}
	for name, tc := range cases {
		obj := tenant()
		tc.mutate(obj)
		errs := ValidateTenantCompute(obj)
		if tc.want == (wantErr{}) {
			if len(errs) > 0 {
				t.Errorf("%s: %v, want valid", name, errs)
			}
			continue
		}
		expectOne(t, name, errs, tc.want)
	}
}

func TestValidImageReferences(t *testing.T) {
	for _, image := range []string{
		"nginx", "nginx:1.27", "library/nginx:latest", "docker.io/library/nginx:1.27-alpine",
		"localhost:5000/app", "registry.example.com/team/app_v2:v1.0.0",
		"ghcr.io/org/app@sha256:" + strings.Repeat("0", 64), "app:1@sha256:" + strings.Repeat("f", 64),
		"[::1]:5000/app:dev", "my-registry.io/a/b/c/d", "a__b", "a---b",
	} {
		if errs := validateImage(image, field.NewPath("image")); len(errs) > 0 {
			t.Errorf("%q: %v", image, errs)
		}
	}
	for _, image := range []string{"-nginx", "nginx-", "a/_b", "app:-x", "app:" + strings.Repeat("t", 129),
		"registry.example.com/" + strings.Repeat("a", 250), "app@sha256", "upper/App", "\tapp"} {
		if errs := validateImage(image, field.NewPath("image")); len(errs) != 1 || errs[0].Type != field.ErrorTypeInvalid {
			t.Errorf("%q: %v, want one invalid error", image, errs)
		}
	}
}

func TestTenantComputeUpdate(t *testing.T) {
	old := tenant()
	changed := old.DeepCopy()
	changed.Spec.Containers[0].Image = "nginx:1.28"
	changed.Spec.Suspended = true
	if errs := ValidateTenantComputeUpdate(changed, old); len(errs) > 0 {
		t.Fatalf("changing an image and suspending: %v", errs)
	}
	for name, tc := range map[string]struct {
		mutate func(*compute.TenantCompute)
		want   wantErr
	}{
		"tenantID changed":     {func(tc *compute.TenantCompute) { tc.Spec.TenantID = "other" }, wantErr{"spec.tenantID", field.ErrorTypeInvalid}},
		"providerType changed": {func(tc *compute.TenantCompute) { tc.Spec.ProviderType = "kubevirt" }, wantErr{"spec.providerType", field.ErrorTypeInvalid}},
		"spec rules still hold": {func(tc *compute.TenantCompute) { tc.Spec.Containers[0].Ports[0].Protocol = "icmp" },
			wantErr{"spec.containers[0].ports[0].protocol", field.ErrorTypeNotSupported}},
	} {
		obj := old.DeepCopy()
		tc.mutate(obj)
		errs := ValidateTenantComputeUpdate(obj, old)
		expectOne(t, name, errs, tc.want)
		if name != "spec rules still hold" && !strings.Contains(errs.ToAggregate().Error(), "may not be changed") {
			t.Errorf("%s: %v does not say the field is immutable", name, errs)
		}
	}
}

func TestTenantComputeStatusUpdate(t *testing.T) {
	old := tenant()
	ok := old.DeepCopy()
	ok.Status = compute.TenantComputeStatus{
		Phase: compute.PhaseReady, State: compute.ComputeStateRunning, Health: compute.HealthStatusHealthy,
		Containers:      []compute.ContainerStatus{{Name: "web", State: "running", Ready: true}, {Name: "worker", State: "running"}},
		ProvisionResult: &compute.ProvisionResult{Status: compute.ProvisionStatusSuccess, Endpoints: []compute.Endpoint{{Type: "http", Address: "10.0.0.1", Port: 80}}},
		UpdateResult:    &compute.UpdateResult{Status: compute.UpdateStatusNoChanges},
		Conditions:      []metav1.Condition{{Type: compute.ConditionReady, Status: metav1.ConditionTrue, Reason: "Running", LastTransitionTime: metav1.Now()}},
	}
	if errs := ValidateTenantComputeStatusUpdate(ok, old); len(errs) > 0 {
		t.Fatalf("valid status: %v", errs)
	}
	for name, tc := range map[string]struct {
		mutate func(*compute.TenantComputeStatus)
		want   wantErr
	}{
		"phase":                  {func(s *compute.TenantComputeStatus) { s.Phase = "Running" }, wantErr{"status.phase", field.ErrorTypeNotSupported}},
		"state":                  {func(s *compute.TenantComputeStatus) { s.State = "Running" }, wantErr{"status.state", field.ErrorTypeNotSupported}},
		"health":                 {func(s *compute.TenantComputeStatus) { s.Health = "ok" }, wantErr{"status.health", field.ErrorTypeNotSupported}},
		"provision status":       {func(s *compute.TenantComputeStatus) { s.ProvisionResult.Status = "done" }, wantErr{"status.provisionResult.status", field.ErrorTypeNotSupported}},
		"provision status empty": {func(s *compute.TenantComputeStatus) { s.ProvisionResult.Status = "" }, wantErr{"status.provisionResult.status", field.ErrorTypeRequired}},
		"endpoint port":          {func(s *compute.TenantComputeStatus) { s.ProvisionResult.Endpoints[0].Port = 70000 }, wantErr{"status.provisionResult.endpoints[0].port", field.ErrorTypeInvalid}},
		"update status":          {func(s *compute.TenantComputeStatus) { s.UpdateResult.Status = "nochange" }, wantErr{"status.updateResult.status", field.ErrorTypeNotSupported}},
		"container unnamed":      {func(s *compute.TenantComputeStatus) { s.Containers[0].Name = "" }, wantErr{"status.containers[0].name", field.ErrorTypeRequired}},
		"container twice":        {func(s *compute.TenantComputeStatus) { s.Containers[1].Name = "web" }, wantErr{"status.containers[1].name", field.ErrorTypeDuplicate}},
		"restarts negative":      {func(s *compute.TenantComputeStatus) { s.Containers[0].RestartCount = -1 }, wantErr{"status.containers[0].restartCount", field.ErrorTypeInvalid}},
		"retries negative":       {func(s *compute.TenantComputeStatus) { s.Retries = -1 }, wantErr{"status.retries", field.ErrorTypeInvalid}},
		"observedGeneration":     {func(s *compute.TenantComputeStatus) { s.ObservedGeneration = -1 }, wantErr{"status.observedGeneration", field.ErrorTypeInvalid}},
		"condition without reason": {func(s *compute.TenantComputeStatus) { s.Conditions[0].Reason = "" },
			wantErr{"status.conditions[0].reason", field.ErrorTypeRequired}},
	} {
		obj := ok.DeepCopy()
		tc.mutate(&obj.Status)
		expectOne(t, name, ValidateTenantComputeStatusUpdate(obj, old), tc.want)
	}
}

func provider() *compute.ComputeProvider {
	return &compute.ComputeProvider{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", ResourceVersion: "1"},
		Spec:       compute.ComputeProviderSpec{Controller: "plinth.dev/plinth-controller", Description: "Deployments and Services"},
	}
}

func TestComputeProvider(t *testing.T) {
	if errs := ValidateComputeProvider(provider()); len(errs) > 0 {
		t.Fatalf("valid provider: %v", errs)
	}
	for name, tc := range map[string]struct {
		mutate func(*compute.ComputeProvider)
		want   wantErr
	}{
		"name not a label":    {func(p *compute.ComputeProvider) { p.Name = "Kube.rnetes" }, wantErr{"metadata.name", field.ErrorTypeInvalid}},
		"namespaced":          {func(p *compute.ComputeProvider) { p.Namespace = "team-a" }, wantErr{"metadata.namespace", field.ErrorTypeForbidden}},
		"no controller":       {func(p *compute.ComputeProvider) { p.Spec.Controller = "" }, wantErr{"spec.controller", field.ErrorTypeRequired}},
		"controller no path":  {func(p *compute.ComputeProvider) { p.Spec.Controller = "plinth-controller" }, wantErr{"spec.controller", field.ErrorTypeInvalid}},
		"controller bad host": {func(p *compute.ComputeProvider) { p.Spec.Controller = "Plinth_dev/c" }, wantErr{"spec.controller", field.ErrorTypeInvalid}},
		"controller too long": {func(p *compute.ComputeProvider) { p.Spec.Controller = "plinth.dev/" + strings.Repeat("c", 250) }, wantErr{"spec.controller", field.ErrorTypeTooLong}},
		"description":         {func(p *compute.ComputeProvider) { p.Spec.Description = strings.Repeat("d", 5000) }, wantErr{"spec.description", field.ErrorTypeTooLong}},
	} {
		obj := provider()
		tc.mutate(obj)
		expectOne(t, name, ValidateComputeProvider(obj), tc.want)
	}
}

// A second controller registering a provider name another controller owns is refused, in
// words that say so.
func TestComputeProviderControllerIsImmutable(t *testing.T) {
	old := provider()
	same := old.DeepCopy()
	same.Spec.Description = "new words"
	if errs := ValidateComputeProviderUpdate(same, old); len(errs) > 0 {
		t.Fatalf("the registering controller updates its provider: %v", errs)
	}
	other := old.DeepCopy()
	other.Spec.Controller = "example.com/rogue"
	errs := ValidateComputeProviderUpdate(other, old)
	expectOne(t, "takeover", errs, wantErr{"spec.controller", field.ErrorTypeForbidden})
	if want := "the provider is registered by plinth.dev/plinth-controller; another controller cannot take it over"; len(errs) == 1 && errs[0].Detail != want {
		t.Errorf("detail %q, want %q", errs[0].Detail, want)
	}
}

func TestComputeProviderStatus(t *testing.T) {
	old := provider()
	ok := old.DeepCopy()
	ok.Status = compute.ComputeProviderStatus{
		ConfigSchema:           &common.RawObject{Raw: []byte(`{"type":"object","properties":{"replicas":{"type":"integer","minimum":1}}}`)},
		ConfigDefaults:         &common.RawObject{Raw: []byte(`{"replicas":1}`)},
		SupportedSecretSources: []string{"kubernetes-secret"},
		SupportedHealthChecks:  []string{"http", "tcp", "exec"},
		Conditions:             []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Serving", LastTransitionTime: metav1.Now()}},
	}
	if errs := ValidateComputeProviderStatusUpdate(ok, old); len(errs) > 0 {
		t.Fatalf("valid status: %v", errs)
	}
	for name, tc := range map[string]struct {
		mutate func(*compute.ComputeProviderStatus)
		want   wantErr
	}{
		"schema an array":       {func(s *compute.ComputeProviderStatus) { s.ConfigSchema.Raw = []byte(`[]`) }, wantErr{"status.configSchema", field.ErrorTypeInvalid}},
		"schema not JSON":       {func(s *compute.ComputeProviderStatus) { s.ConfigSchema.Raw = []byte(`{`) }, wantErr{"status.configSchema", field.ErrorTypeInvalid}},
		"schema not a schema":   {func(s *compute.ComputeProviderStatus) { s.ConfigSchema.Raw = []byte(`{"type":7}`) }, wantErr{"status.configSchema", field.ErrorTypeInvalid}},
		"schema bad properties": {func(s *compute.ComputeProviderStatus) { s.ConfigSchema.Raw = []byte(`{"properties":[1]}`) }, wantErr{"status.configSchema", field.ErrorTypeInvalid}},
		"defaults an array":     {func(s *compute.ComputeProviderStatus) { s.ConfigDefaults.Raw = []byte(`[1]`) }, wantErr{"status.configDefaults", field.ErrorTypeInvalid}},
		"empty secret source":   {func(s *compute.ComputeProviderStatus) { s.SupportedSecretSources = []string{""} }, wantErr{"status.supportedSecretSources[0]", field.ErrorTypeRequired}},
		"secret source twice": {func(s *compute.ComputeProviderStatus) { s.SupportedSecretSources = []string{"a", "a"} },
			wantErr{"status.supportedSecretSources[1]", field.ErrorTypeDuplicate}},
		"unknown health check": {func(s *compute.ComputeProviderStatus) { s.SupportedHealthChecks = []string{"grpc"} },
			wantErr{"status.supportedHealthChecks[0]", field.ErrorTypeNotSupported}},
		"observedGeneration": {func(s *compute.ComputeProviderStatus) { s.ObservedGeneration = -2 }, wantErr{"status.observedGeneration", field.ErrorTypeInvalid}},
		"condition type": {func(s *compute.ComputeProviderStatus) { s.Conditions[0].Type = "" },
			wantErr{"status.conditions[0].type", field.ErrorTypeRequired}},
	} {
		obj := ok.DeepCopy()
		tc.mutate(&obj.Status)
		expectOne(t, name, ValidateComputeProviderStatusUpdate(obj, old), tc.want)
	}
}

func TestTenantIDClaim(t *testing.T) {
	claim := &compute.TenantIDClaim{ObjectMeta: metav1.ObjectMeta{Name: "acme", ResourceVersion: "1"},
		HolderNamespace: "team-a", HolderName: "shop", HolderUID: "u1"}
	if errs := ValidateTenantIDClaim(claim); len(errs) > 0 {
		t.Fatalf("valid claim: %v", errs)
	}
	bad := claim.DeepCopy()
	bad.Name = "Acme"
	expectOne(t, "claim name", ValidateTenantIDClaim(bad), wantErr{"metadata.name", field.ErrorTypeInvalid})
	bad = claim.DeepCopy()
	bad.HolderUID = ""
	expectOne(t, "claim holder", ValidateTenantIDClaim(bad), wantErr{"holderUID", field.ErrorTypeRequired})
	moved := claim.DeepCopy()
	moved.HolderUID = "u2"
	expectOne(t, "claim update", ValidateTenantIDClaimUpdate(moved, claim), wantErr{"holderUID", field.ErrorTypeForbidden})
}
