package artifact

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/plinth-dev/plinth/pkg/oci/registry"
	"github.com/plinth-dev/plinth/pkg/oci/registryauth"
)

// Against a registry Plinth serves, which refuses writes without its credential, the client
// presents the credential this process holds for it (registryauth.Local), and without it the
// push is refused 401 while reads go on.
func TestPushPresentsTheRegistryCredential(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "localhost:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	srv, err := registry.New(registry.Config{Endpoint: endpoint, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })

	digest, err := Push(ctx, endpoint, "plinth/app", "1.0.0", testFiles, testMeta(testFiles))
	if err != nil {
		t.Fatalf("push with the credential: %v", err)
	}
	cred, _ := registryauth.Local.Get(endpoint)
	registryauth.Local.Delete(endpoint, cred)
	defer registryauth.Local.Set(endpoint, cred)

	other := map[string][]byte{"000-configmap-x.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")}
	_, err = Push(ctx, endpoint, "plinth/app", "1.0.0", other, testMeta(testFiles))
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
		t.Errorf("push without the credential: %v, want 401", err)
	}
	if err := DeleteTag(ctx, endpoint, "plinth/app", "1.0.0"); err == nil {
		t.Error("delete without the credential succeeded")
	}
	if tagged, found, err := Lookup(ctx, endpoint, "plinth/app", "1.0.0"); err != nil || !found || tagged.Digest != digest {
		t.Errorf("anonymous lookup: %+v %v %v, want %s", tagged, found, err, digest)
	}
}
