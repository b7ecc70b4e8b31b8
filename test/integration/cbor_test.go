package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/client-go/rest"

	"github.com/plinth-dev/plinth/pkg/apis/score/v1b1"
	clientscheme "github.com/plinth-dev/plinth/pkg/generated/clientset/versioned/scheme"
	"github.com/plinth-dev/plinth/test/integration/framework"
)

const cborNamespace = "cbor"

// TestCBORServing: with --feature-gates=CBORServingAndStorage=true plinth-apiserver reads and
// writes CBOR (application/cbor, and application/cbor-seq on watches) and refuses a malformed
// CBOR body with a 400 Status; with the gate off it answers 406 to a client that accepts only
// CBOR. JSON is unchanged either way.
func TestCBORServing(t *testing.T) {
	t.Run("gate on", func(t *testing.T) {
		p := framework.StartPlinth(t, framework.Options{ExtraArgs: []string{"--feature-gates=CBORServingAndStorage=true"}})
		client := cborHTTPClient(t, p.Config)
		base := p.Config.Host + "/apis/score.dev/v1b1/namespaces/" + cborNamespace + "/workloads"

		w := newWorkload("web", "kubernetes")
		w.APIVersion, w.Kind = v1b1.SchemeGroupVersion.String(), "Workload"
		var body bytes.Buffer
		if err := cbor.NewSerializer(clientscheme.Scheme, clientscheme.Scheme).Encode(w, &body); err != nil {
			t.Fatal(err)
		}
		code, header, data := cborRequest(t, client, http.MethodPost, base, "application/cbor", "application/json", body.Bytes())
		if code != http.StatusCreated {
			t.Fatalf("create with a CBOR body: %d %s", code, data)
		}

		code, header, data = cborRequest(t, client, http.MethodGet, base+"/web", "", "application/cbor", nil)
		if code != http.StatusOK || header.Get("Content-Type") != "application/cbor" {
			t.Fatalf("get as CBOR: %d %q", code, header.Get("Content-Type"))
		}
		got := &v1b1.Workload{}
		if _, _, err := cbor.NewSerializer(clientscheme.Scheme, clientscheme.Scheme).Decode(data, nil, got); err != nil {
			t.Fatalf("the CBOR answer does not decode: %v", err)
		}
		if got.Name != "web" || got.Spec.Containers["main"].Image != w.Spec.Containers["main"].Image {
			t.Errorf("the CBOR answer is %+v", got)
		}

		code, header, _ = cborRequest(t, client, http.MethodGet, base, "", "application/cbor", nil)
		if code != http.StatusOK || header.Get("Content-Type") != "application/cbor" {
			t.Errorf("list as CBOR: %d %q", code, header.Get("Content-Type"))
		}
		code, header, data = cborRequest(t, client, http.MethodGet, base, "", "application/json", nil)
		if code != http.StatusOK || !strings.HasPrefix(header.Get("Content-Type"), "application/json") || !json.Valid(data) {
			t.Errorf("list as JSON with the gate on: %d %q", code, header.Get("Content-Type"))
		}

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"?watch=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		// A client asks for the media type; the server streams it as a sequence.
		req.Header.Set("Accept", "application/cbor")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/cbor-seq" {
			t.Fatalf("watch as CBOR: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		// The watch starts with the existing Workload as an ADDED event: a CBOR data item (the
		// self-described CBOR tag first), read until the event's type has arrived.
		var event []byte
		chunk := make([]byte, 1024)
		for !bytes.Contains(event, []byte("ADDED")) && len(event) < 16<<10 {
			n, err := resp.Body.Read(chunk)
			event = append(event, chunk[:n]...)
			if err != nil {
				break
			}
		}
		if !bytes.HasPrefix(event, []byte{0xd9, 0xd9, 0xf7}) || !bytes.Contains(event, []byte("ADDED")) {
			t.Errorf("the watch's first event is not a CBOR ADDED event: %q", event)
		}

		for _, bad := range []struct{ name, body string }{
			{"truncated", string(body.Bytes()[:len(body.Bytes())/2])},
			{"not CBOR", "this is not CBOR"},
			{"self-described JSON", `{"apiVersion":"score.dev/v1b1"}`},
		} {
			code, header, data := cborRequest(t, client, http.MethodPost, base, "application/cbor", "application/json", []byte(bad.body))
			var status metav1.Status
			if err := json.Unmarshal(data, &status); err != nil || status.Kind != "Status" {
				t.Errorf("malformed CBOR (%s): the answer is not a Status: %d %q %s", bad.name, code, header.Get("Content-Type"), data)
				continue
			}
			if code != http.StatusBadRequest || status.Code != http.StatusBadRequest || status.Message == "" {
				t.Errorf("malformed CBOR (%s): %d %+v, want a 400 Status with a message", bad.name, code, status)
			}
			t.Logf("malformed CBOR (%s): %d %s", bad.name, code, status.Message)
		}
	})

	t.Run("gate off", func(t *testing.T) {
		p := framework.StartPlinth(t, framework.Options{})
		client := cborHTTPClient(t, p.Config)
		base := p.Config.Host + "/apis/score.dev/v1b1/namespaces/" + cborNamespace + "/workloads"
		if _, err := p.Client.ScoreV1b1().Workloads(cborNamespace).Create(context.Background(), newWorkload("web", "kubernetes"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, url := range []string{base + "/web", base} {
			if code, _, data := cborRequest(t, client, http.MethodGet, url, "", "application/cbor", nil); code != http.StatusNotAcceptable {
				t.Errorf("GET %s as CBOR with the gate off: %d %s, want 406", url, code, data)
			}
		}
		code, _, _ := cborRequest(t, client, http.MethodPost, base, "application/cbor", "application/json", []byte{0xa0})
		if code != http.StatusUnsupportedMediaType {
			t.Errorf("a CBOR body with the gate off: %d, want 415", code)
		}
		if code, _, data := cborRequest(t, client, http.MethodGet, base+"/web", "", "application/json", nil); code != http.StatusOK || !json.Valid(data) {
			t.Errorf("get as JSON with the gate off: %d", code)
		}
	})
}

func cborHTTPClient(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// cborRequest sends one request and returns the status code, the headers and the body.
func cborRequest(t *testing.T, client *http.Client, method, url, contentType, accept string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}
