// Command render-deploy renders the Helm chart charts/plinth with charts/plinth/deploy-values.yaml
// into artifacts/deploy, so that the chart is the one source of both: each template
// templates/NN-name.yaml becomes artifacts/deploy/NN-name.yaml, a template that renders nothing
// with these values (the generated certificate, the key Secret, the bundled etcd) becomes no
// file, and any other *.yaml in the output directory is removed.
//
// The rendering is Helm's own engine (helm.sh/helm/v3/pkg/engine) with the chart's schema
// checked, as `helm template` would do, but without a cluster: lookup finds nothing and the
// values make nothing random, so the output is the same on every machine.
// hack/update-deploy.sh runs it; hack/verify-deploy.sh compares a fresh rendering with
// artifacts/deploy.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// Release is the release the artifacts are rendered as: plinth in plinth-system, the only
// namespace the chart accepts.
var Release = chartutil.ReleaseOptions{Name: "plinth", Namespace: "plinth-system", Revision: 1, IsInstall: true}

// Capabilities are those of the Kubernetes the project builds and tests against (v1.37,
// hack/tools), which the chart's kubeVersion must accept; Helm's defaults name v1.20.
var Capabilities = func() *chartutil.Capabilities {
	caps := *chartutil.DefaultCapabilities
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.37.1", Major: "1", Minor: "37"}
	return &caps
}()

// artifactName is a template that becomes a file of artifacts/deploy: NN-name.yaml, so that the
// files apply in name order as the local platform and `kubectl apply -f` take them.
var artifactName = regexp.MustCompile(`^[0-9]{2}-[a-z0-9-]+\.yaml$`)

func main() {
	chartDir := flag.String("chart", "charts/plinth", "The chart's directory.")
	valuesFile := flag.String("values", "charts/plinth/deploy-values.yaml", "Values to render with.")
	out := flag.String("out", "artifacts/deploy", "Directory to write the NN-*.yaml files to; other *.yaml files there are removed.")
	flag.Parse()
	if err := run(*chartDir, *valuesFile, *out); err != nil {
		fmt.Fprintln(os.Stderr, "render-deploy:", err)
		os.Exit(1)
	}
}

// run renders the chart and writes the artifacts.
func run(chartDir, valuesFile, out string) error {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return err
	}
	vals, err := chartutil.ReadValuesFile(valuesFile)
	if err != nil {
		return err
	}
	files, err := Artifacts(chrt, vals)
	if err != nil {
		return err
	}
	return WriteArtifacts(out, files)
}

// Render renders every template of chrt with vals (checked against the chart's schema) as
// Release, using e (engine.Engine{} renders without a cluster). Its keys are the templates'
// paths, such as plinth/templates/70-deployment.yaml.
func Render(e engine.Engine, chrt *chart.Chart, vals map[string]any) (map[string]string, error) {
	renderVals, err := chartutil.ToRenderValues(chrt, vals, Release, Capabilities)
	if err != nil {
		return nil, err
	}
	return e.Render(chrt, renderVals)
}

// Artifacts renders the chart strictly (a value the templates name but the values lack is an
// error) and returns the artifact files by name, leaving out templates that render no object.
func Artifacts(chrt *chart.Chart, vals map[string]any) (map[string][]byte, error) {
	rendered, err := Render(engine.Engine{Strict: true}, chrt, vals)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for name, content := range rendered {
		base := path.Base(name)
		if path.Dir(name) != chrt.Name()+"/templates" || !strings.HasSuffix(base, ".yaml") {
			continue // NOTES.txt and _helpers.tpl
		}
		if !artifactName.MatchString(base) {
			return nil, fmt.Errorf("template %s: artifacts are named NN-name.yaml", name)
		}
		if !hasObject(content) {
			continue
		}
		files[base] = normalize(content)
	}
	return files, nil
}

// hasObject reports whether a rendered template holds anything but comments, blank lines and
// document separators.
func hasObject(content string) bool {
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return true
		}
	}
	return false
}

// normalize drops the blank lines the templates' actions leave at the start and ends the file
// with exactly one newline, with no trailing spaces on any line.
func normalize(content string) []byte {
	lines := strings.Split(content, "\n")
	for i, line := range lines {
		lines[i] = strings.TrimRight(line, " \t")
	}
	return []byte(strings.Trim(strings.Join(lines, "\n"), "\n") + "\n")
}

// WriteArtifacts writes files into dir and removes every other *.yaml there, so that a
// template that was removed or renamed leaves no stale artifact behind.
func WriteArtifacts(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	existing, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range existing {
		if _, keep := files[filepath.Base(f)]; !keep {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		target := filepath.Join(dir, name)
		if old, err := os.ReadFile(target); err == nil && bytes.Equal(old, files[name]) {
			continue // unchanged: keep its modification time
		}
		if err := os.WriteFile(target, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}
