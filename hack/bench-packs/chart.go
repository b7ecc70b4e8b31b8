package main

import (
	"fmt"
	"io"
	"os"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
)

const (
	// chartName is the benchmark chart's name: it is pushed to oci://<registry>/charts/bench.
	chartName = "bench"
	// chartRepository is the registry repository under which charts are pushed.
	chartRepository = "charts"
	// kindsPerCopy is how many objects the chart has per count: a ConfigMap, a Secret, a
	// Service and a Deployment.
	kindsPerCopy = 4
	// defaultCount is the chart's count: 50 of each kind, 200 objects.
	defaultCount = 50
)

// chartValues is the chart's values.yaml. replicas is 0 because what is measured is the
// delivery of the objects, not the rollout of their pods: kube-controller-manager still makes
// a ReplicaSet for each Deployment, on both sides alike.
const chartValues = `# How many of each kind: count ConfigMaps, Secrets, Services and Deployments.
count: 50
replicas: 0
image: registry.example.com/bench/web:1.0
`

// chartTemplates are the chart's templates, written as charts usually are: shared labels in
// a helper, the objects from ranges over .Values.count, a Deployment mounting its ConfigMap
// and Secret behind its Service.
var chartTemplates = map[string]string{
	"_helpers.tpl": `{{- define "bench.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}
`,
	"configmaps.yaml": `{{- range $i := until (int .Values.count) }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ printf "%s-config-%03d" $.Release.Name $i }}
  labels:
    {{- include "bench.labels" $ | nindent 4 }}
data:
  index: {{ $i | quote }}
  settings.yaml: |
    feature: on
    threshold: 0.75
    workers: {{ add 2 (mod $i 4) }}
{{- end }}
`,
	"secrets.yaml": `{{- range $i := until (int .Values.count) }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ printf "%s-secret-%03d" $.Release.Name $i }}
  labels:
    {{- include "bench.labels" $ | nindent 4 }}
type: Opaque
data:
  username: {{ printf "user-%03d" $i | b64enc }}
  password: {{ printf "%s-%03d" $.Release.Name $i | sha256sum | b64enc }}
{{- end }}
`,
	"services.yaml": `{{- range $i := until (int .Values.count) }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ printf "%s-web-%03d" $.Release.Name $i }}
  labels:
    {{- include "bench.labels" $ | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    app.kubernetes.io/instance: {{ $.Release.Name }}
    app.kubernetes.io/component: {{ printf "web-%03d" $i }}
  ports:
  - name: http
    port: 80
    targetPort: http
    protocol: TCP
{{- end }}
`,
	"deployments.yaml": `{{- range $i := until (int .Values.count) }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ printf "%s-web-%03d" $.Release.Name $i }}
  labels:
    {{- include "bench.labels" $ | nindent 4 }}
spec:
  replicas: {{ $.Values.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ $.Release.Name }}
      app.kubernetes.io/component: {{ printf "web-%03d" $i }}
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ $.Release.Name }}
        app.kubernetes.io/component: {{ printf "web-%03d" $i }}
    spec:
      containers:
      - name: web
        image: {{ $.Values.image }}
        ports:
        - name: http
          containerPort: 8080
        envFrom:
        - configMapRef:
            name: {{ printf "%s-config-%03d" $.Release.Name $i }}
        env:
        - name: PASSWORD
          valueFrom:
            secretKeyRef:
              name: {{ printf "%s-secret-%03d" $.Release.Name $i }}
              key: password
        resources:
          requests:
            cpu: 10m
            memory: 32Mi
{{- end }}
`,
}

// buildChart is the benchmark chart at version, in memory.
func buildChart(version string) (*chart.Chart, error) {
	ch := &chart.Chart{Metadata: &chart.Metadata{
		APIVersion: chart.APIVersionV2, Name: chartName, Version: version, AppVersion: "1.0",
		Description: "The infrastructure-packs benchmark's chart: count ConfigMaps, Secrets, Services and Deployments.",
		Type:        "application",
	}}
	for name, data := range chartTemplates {
		ch.Templates = append(ch.Templates, &chart.File{Name: "templates/" + name, Data: []byte(data)})
	}
	// chartutil.Save writes values.yaml from Raw; Values is what rendering in memory reads.
	ch.Raw = append(ch.Raw, &chart.File{Name: chartutil.ValuesfileName, Data: []byte(chartValues)})
	values, err := chartutil.ReadValues([]byte(chartValues))
	if err != nil {
		return nil, fmt.Errorf("the benchmark chart's values.yaml does not parse: %w", err)
	}
	ch.Values = values
	return ch, nil
}

// archiveChart packages the chart at version with the Helm SDK (`helm package`) and returns
// the .tgz.
func archiveChart(version string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "plinth-bench-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ch, err := buildChart(version)
	if err != nil {
		return nil, err
	}
	file, err := chartutil.Save(ch, dir)
	if err != nil {
		return nil, fmt.Errorf("packaging chart %s %s: %w", chartName, version, err)
	}
	return os.ReadFile(file)
}

// chartURL is the pack's chart URL of the charts pushed to the registry at endpoint
// (host:port), served over plain HTTP on loopback.
func chartURL(endpoint string) string { return "oci://" + endpoint + "/" + chartRepository }

// pushChart pushes the chart at version to the registry at endpoint with Helm's registry
// client (`helm push`), anonymously over plain HTTP.
func pushChart(endpoint, version string) error {
	archive, err := archiveChart(version)
	if err != nil {
		return err
	}
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(os.DevNull),
		registry.ClientOptWriter(io.Discard))
	if err != nil {
		return err
	}
	ref := fmt.Sprintf("%s/%s/%s:%s", endpoint, chartRepository, chartName, version)
	if _, err := client.Push(archive, ref); err != nil {
		return fmt.Errorf("pushing chart %s: %w", ref, err)
	}
	return nil
}
