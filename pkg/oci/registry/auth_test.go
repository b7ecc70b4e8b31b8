package registry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"k8s.io/klog/v2"

	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
)

// unauthorized says whether err is the registry's 401.
func unauthorized(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusUnauthorized
}

// Anyone reads; only the holder of the registry's credential writes: pushes, tag moves and
// deletes without it (or with a wrong one) are refused 401 with a basic challenge, and leave
// the registry as it was.
func TestWritesNeedTheCredential(t *testing.T) {
	var logs bytes.Buffer
	klog.LogToStderr(false)
	klog.SetOutput(&logs)
	defer func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	}()
	endpoint, dir := freeEndpoint(t), t.TempDir()
	start(t, endpoint, dir)
	cred, ok := registryauth.Local.Get(endpoint)
	if !ok {
		t.Fatal("the running registry's credential is not in registryauth.Local")
	}
	if onDisk, err := registryauth.Read(dir); err != nil || onDisk != cred {
		t.Fatalf("the token file does not hold the credential: %v", err)
	}
	ref := endpoint + "/plinth/app:1.0.0"
	want := push(t, ref)

	// Anonymous reads: what Flux does.
	if got, err := crane.Digest(ref, crane.Insecure); err != nil || got != want {
		t.Errorf("anonymous digest %q, %v; want %q", got, err, want)
	}
	if _, err := crane.Pull(ref, crane.Insecure); err != nil {
		t.Errorf("anonymous pull: %v", err)
	}
	if _, err := crane.ListTags(endpoint+"/plinth/app", crane.Insecure); err != nil {
		t.Errorf("anonymous tag list: %v", err)
	}

	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	wrong := crane.WithAuth(authn.FromConfig(authn.AuthConfig{Username: registryauth.Username, Password: strings.Repeat("0", 64)}))
	for name, opts := range map[string][]crane.Option{
		"anonymous":          {crane.Insecure},
		"a wrong credential": {crane.Insecure, wrong},
	} {
		if err := crane.Push(img, ref, opts...); !unauthorized(err) {
			t.Errorf("%s push: %v, want 401", name, err)
		}
		if err := crane.Tag(ref, "moved", opts...); !unauthorized(err) {
			t.Errorf("%s tag: %v, want 401", name, err)
		}
		if err := crane.Delete(ref, opts...); !unauthorized(err) {
			t.Errorf("%s delete: %v, want 401", name, err)
		}
	}
	if got, err := crane.Digest(ref, crane.Insecure); err != nil || got != want {
		t.Errorf("after the refused writes: digest %q, %v; want %q", got, err, want)
	}
	if tags, err := crane.ListTags(endpoint+"/plinth/app", crane.Insecure); err != nil || len(tags) != 1 {
		t.Errorf("tags %v, %v; want only 1.0.0", tags, err)
	}

	// The raw answer, as any client sees it: 401, a basic challenge, distribution's error body.
	for _, req := range []struct{ method, path string }{
		{http.MethodPost, "/v2/plinth/app/blobs/uploads/"},
		{http.MethodPut, "/v2/plinth/app/manifests/1.0.0"},
		{http.MethodDelete, "/v2/plinth/app/manifests/" + want},
		{http.MethodGet, "/v2/plinth/app/blobs/uploads/0f6a2d3c-5d0b-4e5a-9b51-1f1f1f1f1f1f"},
		{http.MethodPatch, "/v2/plinth/app/blobs/uploads/0f6a2d3c-5d0b-4e5a-9b51-1f1f1f1f1f1f"},
	} {
		r, err := http.NewRequest(req.method, "http://"+endpoint+req.path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Basic realm="plinth-registry"` ||
			!strings.Contains(string(body), `"code":"UNAUTHORIZED"`) {
			t.Errorf("%s %s: %s %q %s", req.method, req.path, resp.Status, resp.Header.Get("WWW-Authenticate"), body)
		}
	}
	klog.Flush()
	if strings.Contains(logs.String(), cred.Password) {
		t.Error("the token is in the logs")
	}
}

// The token outlives a restart, and leaves the keychain when the registry stops.
func TestCredentialSurvivesARestart(t *testing.T) {
	endpoint, dir := freeEndpoint(t), t.TempDir()
	s := start(t, endpoint, dir)
	first, ok := registryauth.Local.Get(endpoint)
	if !ok {
		t.Fatal("no credential")
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := registryauth.Local.Get(endpoint); ok {
		t.Error("a stopped registry's credential is still in registryauth.Local")
	}
	start(t, endpoint, dir)
	if again, ok := registryauth.Local.Get(endpoint); !ok || again != first {
		t.Error("the restarted registry has another credential")
	}
	push(t, endpoint+"/plinth/app:1")
}
