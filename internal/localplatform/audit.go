package localplatform

import (
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// AuditPolicyArtifact is the file of artifacts/deploy that holds plinth-apiserver's audit
// policy: a ConfigMap, so that it is applied with the other artifacts and the Deployment mounts
// it. An audit.k8s.io Policy is not an API object, and a bare one in artifacts/deploy would make
// `kubectl apply -f artifacts/deploy/` fail.
const AuditPolicyArtifact = "65-audit-policy.yaml"

// AuditPolicyKey is the ConfigMap's key that holds the policy document.
const AuditPolicyKey = "policy.yaml"

// AuditPolicy reads plinth-apiserver's audit policy document out of the ConfigMap in
// artifactsDir/AuditPolicyArtifact.
func AuditPolicy(artifactsDir string) ([]byte, error) {
	path := filepath.Join(artifactsDir, AuditPolicyArtifact)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" {
		return nil, fmt.Errorf("%s: want a v1 ConfigMap, found %s %s", path, cm.APIVersion, cm.Kind)
	}
	policy, ok := cm.Data[AuditPolicyKey]
	if !ok || policy == "" {
		return nil, fmt.Errorf("%s: the ConfigMap has no %s", path, AuditPolicyKey)
	}
	return []byte(policy), nil
}

// AuditLogPath is the file plinth-apiserver writes its audit events to, one JSON event per
// line: <platform dir>/logs/plinth-apiserver-audit.log.
func (p *Platform) AuditLogPath() string {
	return filepath.Join(p.LogDir(), "plinth-apiserver-audit.log")
}

// auditPolicyFile is where the platform keeps the policy for --audit-policy-file.
func (p *Platform) auditPolicyFile() string { return filepath.Join(p.cfg.Dir, "audit-policy.yaml") }

// auditArgs writes the policy of the artifacts to the platform directory, anew at every start
// so that a changed policy takes effect as a rolled Deployment's would, and returns
// plinth-apiserver's audit flags. The log is rotated at 100 MB, keeping one older file.
func (p *Platform) auditArgs() ([]string, error) {
	policy, err := AuditPolicy(p.cfg.ArtifactsDir)
	if err != nil {
		return nil, fmt.Errorf("audit policy: %w", err)
	}
	if err := os.WriteFile(p.auditPolicyFile(), policy, 0o644); err != nil {
		return nil, err
	}
	return []string{"--audit-policy-file", p.auditPolicyFile(), "--audit-log-path", p.AuditLogPath(),
		"--audit-log-maxsize", "100", "--audit-log-maxbackup", "1"}, nil
}
