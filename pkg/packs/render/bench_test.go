package render

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkRender renders a cached chart of 200 objects (100 Deployments, 100 Services) with
// values, as a re-render of an unchanged pack does.
func BenchmarkRender(b *testing.B) {
	templates := map[string]string{}
	for i := range 100 {
		templates[fmt.Sprintf("app%03d.yaml", i)] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-app%[1]d
  labels: {app: app%[1]d, release: {{ .Release.Name | quote }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: app%[1]d}}
  template:
    metadata: {labels: {app: app%[1]d}}
    spec:
      containers:
      - name: app
        image: {{ .Values.image }}:{{ .Chart.AppVersion | default "1.0" }}
        ports: [{containerPort: 8080}]
        resources: {requests: {cpu: 10m, memory: 32Mi}}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-app%[1]d
spec:
  selector: {app: app%[1]d}
  ports: [{port: 80, targetPort: 8080}]
`, i)
	}
	repo := startRepo(b, testChart{name: "big", version: "1.0.0", values: "replicas: 1\nimage: nginx\n", templates: templates})
	r := New()
	src := Source{Chart: repo.chartOf("big", "1.0.0"), Values: []byte(`{"replicas":2}`)}
	res, err := r.Render(context.Background(), src, opts)
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Objects) != 200 {
		b.Fatalf("%d objects", len(res.Objects))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Render(context.Background(), src, opts); err != nil {
			b.Fatal(err)
		}
	}
}
